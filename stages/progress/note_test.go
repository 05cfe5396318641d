package progress

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestNoteBetweenReports: notes from several goroutines, while the bar is
// redrawn on a terminal, each come out whole on a cleared line, and the
// bar's last report follows them.
func TestNoteBetweenReports(t *testing.T) {
	var out bytes.Buffer // written only under the bar's lock
	b := Start(&out, true, time.Millisecond, "rollout", "r1", "episodes", 8)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			b.Note("endpoint %d drained", i)
			b.Done(false)
		})
	}
	wg.Wait()
	b.Finish()
	got := out.String()
	for i := range 8 {
		if want := fmt.Sprintf("\r\033[Krlgate: endpoint %d drained\n", i); !strings.Contains(got, want) {
			t.Errorf("no whole note %q in %q", want, got)
		}
	}
	if !strings.Contains(got[strings.LastIndex(got, "\r"):], "8/8 episodes") {
		t.Errorf("the last report is not the bar's: %q", got)
	}
	Start(nil, false, 0, "rollout", "r1", "episodes", 1).Note("nowhere") // no writer: nothing to do, no panic
}
