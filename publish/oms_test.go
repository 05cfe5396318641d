package publish

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const omsTestdata = "../testdata/oms"

// failedChecks names the checks of v that failed.
func failedChecks(v *Verification) []string {
	var out []string
	for _, c := range v.Checks {
		if !c.OK {
			out = append(out, c.Name)
		}
	}
	return out
}

// copyModel copies a reference model directory, so a test can change it.
func copyModel(t *testing.T, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	if err := os.CopyFS(dst, os.DirFS(filepath.Join(omsTestdata, "reference-signer", name))); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestReferenceSignatures: the OpenSSF reference signer's bundles (key
// method at v1.0.1 and v1.1.0, certificate method at v1.1.0) verify with
// the key and CA chain it was tested with, and fail on the files check
// after one byte of a signed model file changes. v1.0.1's statement names
// no ignore paths, so ignore-me is left out as its test script does.
func TestReferenceSignatures(t *testing.T) {
	keys := filepath.Join(omsTestdata, "reference-signer", "keys")
	for _, tc := range []struct {
		name string
		opts VerifyOptions
	}{
		{"v1.1.0-elliptic-key", VerifyOptions{PublicKey: filepath.Join(keys, "signing-key-pub.pem")}},
		{"v1.0.1-elliptic-key", VerifyOptions{PublicKey: filepath.Join(keys, "signing-key-pub.pem")}},
		{"v1.1.0-certificate", VerifyOptions{CertificateChain: []string{filepath.Join(keys, "ca-cert.pem")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyModel(t, tc.name)
			tc.opts.IgnorePaths = []string{filepath.Join(dir, "ignore-me")}
			v, err := VerifyBundle(context.Background(), dir, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if !v.OK || v.Files != 2 {
				t.Fatalf("reference bundle: failed %v, %d files: %+v", failedChecks(v), v.Files, v.Checks)
			}
			f, err := os.OpenFile(filepath.Join(dir, "signme-1"), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Write([]byte{'x'}); err != nil {
				t.Fatal(err)
			}
			f.Close()
			v, err = VerifyBundle(context.Background(), dir, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{CheckFiles}, failedChecks(v)); diff != "" {
				t.Errorf("after one byte of signme-1 changed, failed checks (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSpecVectors: the spec's valid vectors pass the OMS schemas, and each
// invalid one (bundle or payload) is rejected by them.
func TestSpecVectors(t *testing.T) {
	for _, set := range []string{"valid", "invalid", "invalid-payload"} {
		files, err := filepath.Glob(filepath.Join(omsTestdata, "spec-vectors", set, "*.json"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no vectors: %v", set, err)
		}
		for _, f := range files {
			t.Run(set+"/"+filepath.Base(f), func(t *testing.T) {
				dir := t.TempDir()
				v, err := VerifyBundle(context.Background(), dir, VerifyOptions{Signature: f})
				if err != nil {
					t.Fatal(err)
				}
				schemaOK := v.Checks[0].Name == CheckSchema && v.Checks[0].OK
				if schemaOK != (set == "valid") {
					t.Errorf("schema check %v, want %v: %+v", schemaOK, set == "valid", v.Checks[0])
				}
				if set != "valid" && v.OK {
					t.Errorf("an invalid vector verified: %+v", v.Checks)
				}
			})
		}
	}
}
