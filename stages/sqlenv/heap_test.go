package sqlenv

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// TestHeapHardLimit: with the value-length cap raised out of the way, an
// allocation past HeapHardLimit fails the statement with ErrOutOfMemory
// instead of growing the process, and the connection stays usable.
func TestHeapHardLimit(t *testing.T) {
	e := newTestExecutor(t, Options{MaxValueLength: 1 << 30, MaxConns: 1})
	q := fmt.Sprintf("SELECT length(randomblob(%d))", 2*HeapHardLimit)
	if res, err := e.Execute(context.Background(), dogKennels, q); !errors.Is(err, ErrOutOfMemory) {
		t.Fatalf("%s: %v, %v; want ErrOutOfMemory", q, res, err)
	}
	if res, err := e.Execute(context.Background(), dogKennels, "SELECT count(*) FROM Dogs"); err != nil || res.Rows[0][0] != Int(15) {
		t.Errorf("the connection after the failed allocation: %v, %v", res, err)
	}
}
