package torchtrainer

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestWithoutTorchTheTaggedTestFails runs the torch-tagged test where no
// interpreter has torch: it must fail and say what to install, not print
// a bare "ok" (go test shows a skip only with -v), and skip only when
// RLGATE_TORCH_SKIP=1 says a skip is wanted. Before, it skipped silently.
func TestWithoutTorchTheTaggedTestFails(t *testing.T) {
	if _, err := os.ReadFile("torch_test.go"); err != nil { // and go test's cache sees it change
		t.Fatal(err)
	}
	gotest := func(env ...string) (string, error) {
		cmd := exec.Command("go", "test", "-count=1", "-tags", "torch", "-v", "-run", "^TestTrainerThroughLedgerPassesWeightAudit$", ".")
		cmd.Env = append(os.Environ(), append([]string{"RLGATE_TORCH_PYTHON=/nonexistent/python3"}, env...)...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := gotest()
	if err == nil || !strings.Contains(out, "--- FAIL") || !strings.Contains(out, "apt-get install python3-torch") {
		t.Errorf("without torch: err %v, output:\n%s", err, out)
	}
	out, err = gotest("RLGATE_TORCH_SKIP=1")
	if err != nil || !strings.Contains(out, "--- SKIP") {
		t.Errorf("without torch, RLGATE_TORCH_SKIP=1: err %v, output:\n%s", err, out)
	}
}
