package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDescribeHostProbesOncePerPath: the version commands run once per
// PATH, and a PATH with other tools on it is probed afresh.
func TestDescribeHostProbesOncePerPath(t *testing.T) {
	calls := filepath.Join(t.TempDir(), "calls")
	fakePython := func(version string) string {
		dir := t.TempDir()
		script := "#!/bin/sh\necho x >> " + calls + "\necho Python " + version + "\n"
		if err := os.WriteFile(filepath.Join(dir, "python3"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	a, b := fakePython("9.9.1"), fakePython("9.9.2")
	for i, tc := range []struct{ path, want string }{{a, "9.9.1"}, {a, "9.9.1"}, {b, "9.9.2"}} {
		t.Setenv("PATH", tc.path)
		h := DescribeHost(ctx)
		if h.Tools["python3"] != tc.want {
			t.Errorf("call %d: python3 %q, want %q", i, h.Tools["python3"], tc.want)
		}
		h.Tools["python3"] = "changed by a caller" // must not reach the next caller
	}
	n, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(n), "x"); got != 2 {
		t.Errorf("python3 --version ran %d times for two PATHs, want 2", got)
	}
}
