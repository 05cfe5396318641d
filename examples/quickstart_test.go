// Package examples holds the runnable examples; this test checks that the
// quickstart script is safe to point at a folder.
package examples

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestQuickstartKeepsFoldersItDidNotMake: pointed at a folder holding the
// user's files, quickstart.sh refuses and removes nothing, and a relative
// WORKDIR is taken from where the user stands. Before, it ran
// rm -rf WORKDIR, resolved against the repository root. The refusal comes
// before the build, so the test takes no time; README's own command (sh
// examples/quickstart.sh) runs the whole flow.
func TestQuickstartKeepsFoldersItDidNotMake(t *testing.T) {
	script, err := filepath.Abs("quickstart.sh")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadFile(script); err != nil { // and go test's cache sees it change
		t.Fatal(err)
	}
	cwd := t.TempDir()
	notes := filepath.Join(cwd, "results", "notes.txt")
	if err := os.MkdirAll(filepath.Dir(notes), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(notes, []byte("my notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"results", filepath.Join(cwd, "results")} {
		cmd := exec.Command("sh", script, dir)
		cmd.Dir = cwd
		out, err := cmd.CombinedOutput()
		if code := cmd.ProcessState.ExitCode(); err == nil || code != 2 {
			t.Errorf("quickstart.sh %s: exit %d (%v), want 2:\n%s", dir, code, err, out)
		}
		if want := filepath.Join(cwd, "results") + " holds files this script did not make"; !strings.Contains(string(out), want) {
			t.Errorf("quickstart.sh %s says %q, want it to name %q", dir, out, want)
		}
		if b, err := os.ReadFile(notes); err != nil || string(b) != "my notes\n" {
			t.Fatalf("quickstart.sh %s: notes.txt is gone or changed: %q, %v", dir, b, err)
		}
		if entries, _ := os.ReadDir(filepath.Dir(notes)); len(entries) != 1 {
			t.Errorf("quickstart.sh %s wrote into the user's folder: %v", dir, entries)
		}
	}
}
