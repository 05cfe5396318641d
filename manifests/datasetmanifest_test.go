package manifests

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/ledgertest"
)

// TestDatasetManifestBytesFollowFormat builds the manifest blob of small
// trees by hand from docs/FORMAT.md ("Dataset manifests": field names,
// omission rules, node order, what files and bytes count; digests from
// their stated preimages) and checks that the bytes rlgate stores are
// exactly those, so a second implementation can reproduce the manifest
// digest an artifact entry names.
func TestDatasetManifestBytesFollowFormat(t *testing.T) {
	u64be := func(v int) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }
	dirDigest := func(children ...[]byte) ledger.Digest {
		pre := []byte("rlgate/tree/dir/v1\x00")
		for _, c := range children {
			pre = append(pre, c...)
		}
		return ledger.Sum(pre)
	}
	child := func(typ byte, name string, size int, d ledger.Digest) []byte {
		b := append([]byte{typ}, u64be(len(name))...)
		b = append(append(b, name...), u64be(size)...)
		return append(b, d[:]...) // the 32 raw bytes
	}

	t.Run("tree", func(t *testing.T) {
		// Byte order of full paths puts a/l and a/x between a.txt and a0.
		root := t.TempDir()
		for p, c := range map[string]string{"a-b": "x", "a.txt": "", "a/x": "hello\n"} {
			full := filepath.Join(root, p)
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Mkdir(filepath.Join(root, "a0"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("../a.txt", filepath.Join(root, "a", "l")); err != nil {
			t.Fatal(err)
		}
		ab, empty, x := ledger.Sum([]byte("x")), ledger.Sum(nil), ledger.Sum([]byte("hello\n"))
		link := ledger.Sum([]byte("rlgate/tree/link/v1\x00../a.txt"))
		a := dirDigest(child('l', "l", 0, link), child('f', "x", 6, x))
		a0 := dirDigest()
		top := dirDigest(child('d', "a", 0, a), child('f', "a-b", 1, ab), child('f', "a.txt", 0, empty), child('d', "a0", 0, a0))
		want := `{"bytes":7,"digest":"` + top.String() + `","files":3,"format":"rlgate.dataset/v1","nodes":[` +
			`{"digest":"` + top.String() + `","path":".","type":"dir"},` +
			`{"digest":"` + a.String() + `","path":"a","type":"dir"},` +
			`{"digest":"` + ab.String() + `","path":"a-b","size":1,"type":"file"},` +
			`{"digest":"` + empty.String() + `","path":"a.txt","type":"file"},` +
			`{"digest":"` + link.String() + `","path":"a/l","target":"../a.txt","type":"link"},` +
			`{"digest":"` + x.String() + `","path":"a/x","size":6,"type":"file"},` +
			`{"digest":"` + a0.String() + `","path":"a0","type":"dir"}],` +
			fmt.Sprintf(`"root":%q,"type":"dir"}`, root)
		checkManifestBytes(t, root, want)
	})

	t.Run("file root", func(t *testing.T) {
		root := filepath.Join(t.TempDir(), "f.bin")
		if err := os.WriteFile(root, []byte("abc"), 0o644); err != nil {
			t.Fatal(err)
		}
		d := ledger.Sum([]byte("abc"))
		want := `{"bytes":3,"digest":"` + d.String() + `","files":1,"format":"rlgate.dataset/v1","nodes":[` +
			`{"digest":"` + d.String() + `","path":".","size":3,"type":"file"}],` +
			fmt.Sprintf(`"root":%q,"type":"file"}`, root)
		checkManifestBytes(t, root, want)
	})
}

// A symlink named as the root is refused, not hashed as a link nor
// followed (docs/FORMAT.md "Dataset manifests").
func TestDatasetManifestSymlinkRootRefused(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "l")
	if err := os.Symlink("f", link); err != nil {
		t.Fatal(err)
	}
	if m, err := HashTree(t.Context(), link); err == nil || !strings.Contains(err.Error(), "is a symlink; name its target instead") {
		t.Errorf("HashTree(symlink) = %+v, %v; want the symlink refused", m, err)
	}
}

// checkManifestBytes records root's manifest as rlgate hash --record does
// and checks that the blob the artifact entry names holds want, byte for
// byte, and is named by its BLAKE3.
func checkManifestBytes(t *testing.T, root, want string) {
	t.Helper()
	m, err := HashTree(t.Context(), root)
	if err != nil {
		t.Fatal(err)
	}
	l := ledgertest.New(t)
	e, err := l.RecordArtifact(t.Context(), "", ledger.Artifact{Role: "dataset", Name: "d", Kind: "dataset", Digest: m.Digest}, m)
	if err != nil {
		t.Fatal(err)
	}
	got, err := l.ReadBlob(e.Blobs[0])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("manifest blob of %s (-FORMAT.md +rlgate):\n%s", root, diff)
	}
	if e.Blobs[0] != ledger.Sum([]byte(want)) {
		t.Errorf("manifest blob named %s, want the BLAKE3 of its bytes", e.Blobs[0])
	}
}
