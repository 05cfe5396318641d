//go:build omspython

package publish

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// omsPython is the Python with the cryptography package: Debian's
// python3-cryptography (apt-get install python3-cryptography), or
// RLGATE_OMS_PYTHON.
func omsPython(t *testing.T) string {
	t.Helper()
	py := os.Getenv("RLGATE_OMS_PYTHON")
	if py == "" {
		py = "/usr/bin/python3"
	}
	if out, err := exec.Command(py, "-c", "import cryptography").CombinedOutput(); err != nil {
		t.Fatalf("%s cannot import cryptography (apt-get install python3-cryptography, or set RLGATE_OMS_PYTHON): %v\n%s", py, err, out)
	}
	return py
}

// omsPythonVerify runs testdata/oms/verify_oms.py and reports whether it
// accepted the signature.
func omsPythonVerify(t *testing.T, py string, args ...string) (bool, string) {
	t.Helper()
	out, err := exec.Command(py, append([]string{filepath.Join(omsTestdata, "verify_oms.py")}, args...)...).CombinedOutput()
	if _, exit := err.(*exec.ExitError); err != nil && !exit {
		t.Fatal(err)
	}
	return err == nil && strings.HasPrefix(string(out), "OK"), string(out)
}

// TestSignModelVerifiesInPython: what SignModel writes verifies under an
// independent verifier written from model_signing's (Python cryptography,
// testdata/oms/verify_oms.py), and fails there after one byte of a model
// file changes. The script accepts the reference signer's bundle first, so
// it is known to check what model_signing checks.
func TestSignModelVerifiesInPython(t *testing.T) {
	py := omsPython(t)
	ref := filepath.Join(omsTestdata, "reference-signer")
	if ok, out := omsPythonVerify(t, py, filepath.Join(ref, "v1.1.0-elliptic-key"), filepath.Join(ref, "v1.1.0-elliptic-key", SignatureFile),
		filepath.Join(ref, "keys", "signing-key-pub.pem"), "ignore-me"); !ok {
		t.Fatalf("the script rejects the reference signature: %s", out)
	}

	key := filepath.Join(t.TempDir(), "k")
	if _, err := GenerateKey(key); err != nil {
		t.Fatal(err)
	}
	s, err := LoadSigner(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "model")
	if err := os.CopyFS(dir, os.DirFS("../testdata/safetensors")); err != nil {
		t.Fatal(err)
	}
	sig, rs, _, err := SignModel(context.Background(), dir, "model", nil, s)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, SignatureFile), sig, 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{dir, filepath.Join(dir, SignatureFile), key + PublicKeySuffix}
	if ok, out := omsPythonVerify(t, py, args...); !ok || !strings.Contains(out, fmt.Sprintf("OK %d files", len(rs))) {
		t.Fatalf("rlgate's signature over %d files: %s", len(rs), out)
	}
	f := filepath.Join(dir, rs[0].Name)
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x01
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if ok, out := omsPythonVerify(t, py, args...); ok || !strings.Contains(out, "FAIL files") {
		t.Errorf("after one byte of %s changed: %s", rs[0].Name, out)
	}
}
