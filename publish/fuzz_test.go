package publish

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// FuzzVerifyBundle: VerifyBundle reads any bytes as model.sig without
// panicking, and none passes for an empty directory (every seed is a real
// bundle, whose files are missing there).
func FuzzVerifyBundle(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join(omsTestdata, "*", "*", "*.json"))
	sigs, _ := filepath.Glob(filepath.Join(omsTestdata, "reference-signer", "*", SignatureFile))
	for _, p := range append(seeds, sigs...) {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	key := filepath.Join(omsTestdata, "reference-signer", "keys", "signing-key-pub.pem")
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		sig := filepath.Join(t.TempDir(), SignatureFile)
		if err := os.WriteFile(sig, b, 0o644); err != nil {
			t.Fatal(err)
		}
		v, err := VerifyBundle(context.Background(), dir, VerifyOptions{PublicKey: key, Signature: sig})
		if err == nil && v.OK {
			t.Errorf("a bundle verified over an empty directory: %+v", v.Checks)
		}
	})
}
