package torchtrainer

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestWithoutTorchTheTaggedTestFails runs the torch-tagged test where no
// interpreter has torch: it must fail and say what to install, not print
// a bare "ok" (go test shows a skip only with -v), and skip only when
// RLGATE_TORCH_SKIP=1 says a skip is wanted. Before, it skipped silently.
// The tagged test binary is built once and run twice: linking it is
// most of this test's time.
func TestWithoutTorchTheTaggedTestFails(t *testing.T) {
	if _, err := os.ReadFile("torch_test.go"); err != nil { // and go test's cache sees it change
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "torch.test")
	if out, err := exec.Command("go", "test", "-c", "-tags", "torch", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build the torch-tagged test: %v\n%s", err, out)
	}
	gotest := func(env ...string) (string, error) {
		cmd := exec.Command(bin, "-test.count=1", "-test.v", "-test.run", "^TestTrainerThroughLedgerPassesWeightAudit$")
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
