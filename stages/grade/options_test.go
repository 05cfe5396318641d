package grade

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/rlgate/rlgate/stages/sqlenv"
)

// TestRecordedOptionsShape: what a grading records as grader_options keeps
// the field names and order gradings recorded before Options embedded
// sqlenv.Options, so no recorded byte changes; and it reads back into the
// options it was recorded from (rlgate reproduce grades again with them).
func TestRecordedOptionsShape(t *testing.T) {
	got, err := json.Marshal(DefaultOptions().Record())
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"BirdBudget":30000000000,"QueryTimeout":60000000000,"MaxRows":1000000,"MaxBytes":33554432,"MaxConns":0}`
	if string(got) != want {
		t.Errorf("recorded grader options\n got %s\nwant %s", got, want)
	}
	o := Options{BirdBudget: time.Second, Options: sqlenv.Options{Timeout: 2 * time.Second, MaxRows: 3, MaxBytes: 4, MaxConns: 5}}
	if back := o.Record().Options(); back != o {
		t.Errorf("recorded and read back: %+v, want %+v", back, o)
	}
}
