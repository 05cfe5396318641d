package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/workflow/reproduce"
)

// TestReproduceExitCodes: rlgate reproduce exits 0 when a recorded stage
// reproduces, and 3, naming the file and its first differing byte, when a
// stage writes random bytes; --json prints each verdict with its entry.
func TestReproduceExitCodes(t *testing.T) {
	work := t.TempDir()
	t.Chdir(work)
	ldir := filepath.Join(work, ".rlgate")
	if code, _, errOut := rlgate(t, "init", "--ledger", ldir); code != 0 {
		t.Fatal(errOut)
	}
	for _, stage := range [][]string{
		{"same", "printf same > same.txt", "same.txt"},
		{"noise", "head -c 256 /dev/urandom > noise.bin", "noise.bin"},
	} {
		if code, _, errOut := rlgate(t, "run", "--ledger", ldir, "--stage", stage[0], "--run", stage[0], "--out", "out="+stage[2], "--", "sh", "-c", stage[1]); code != 0 {
			t.Fatalf("run %s: %s", stage[0], errOut)
		}
	}
	if code, out, errOut := rlgate(t, "reproduce", "--ledger", ldir, "same"); code != 0 || !strings.Contains(out, "identical") {
		t.Errorf("reproduce same: exit %d, %s %s", code, out, errOut)
	}
	code, out, errOut := rlgate(t, "reproduce", "--ledger", ldir, "--stage", "noise")
	if code != exitCheckFailed || !strings.Contains(out, "out differs at file noise.bin: byte offset ") {
		t.Errorf("reproduce noise: exit %d, want 3 naming noise.bin and an offset: %s %s", code, out, errOut)
	}
	code, out, _ = rlgate(t, "reproduce", "--ledger", ldir, "--json", "same", "noise")
	var rs []reproduce.Result
	if err := json.Unmarshal([]byte(out), &rs); err != nil || code != exitCheckFailed || len(rs) != 2 || !rs[0].Reproduced || rs[1].Reproduced || rs[1].Seq == 0 {
		t.Errorf("--json: exit %d, %v: %s", code, err, out)
	}
	if code, _, errOut := rlgate(t, "reproduce", "--ledger", ldir); code != exitUsage {
		t.Errorf("reproduce with nothing named: exit %d, want 2: %s", code, errOut)
	}
}
