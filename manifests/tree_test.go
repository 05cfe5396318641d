package manifests

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/rlgate/rlgate/ledger"
)

// writeTree creates files (path -> content) under a new temp dir.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, c := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func mustHash(t *testing.T, root string) *DatasetManifest {
	t.Helper()
	m, err := HashTree(t.Context(), root)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var sample = map[string]string{
	"dev.json":                 `[{"question": "How many singers?"}]`,
	"database/a/a.sqlite":      "SQLite format 3\x00...",
	"database/b/b.sqlite":      "other bytes",
	"database/b/schema.sql":    "CREATE TABLE t(x);",
	"predictions/gpt4.txt":     "SELECT 1\n",
	"predictions/a-b/nested.x": "",
}

// TestTreeDigestGolden pins the dataset digest definition: if this value
// changes, every recorded dataset manifest stops matching.
func TestTreeDigestGolden(t *testing.T) {
	m := mustHash(t, writeTree(t, sample))
	const want = "blake3:27e173884ac755177e6076e34bea06f64352f6b5c0049229de89d050b106fbc4"
	if m.Digest.String() != want {
		t.Errorf("tree digest = %s, want %s (a change here breaks every recorded manifest: bump DatasetFormat and say so in docs/FORMAT.md)", m.Digest, want)
	}
	if m.Files != 6 || m.Type != NodeDir || m.Nodes[0].Path != "." {
		t.Errorf("manifest = %+v", m)
	}
}

func TestTreeDigestProperties(t *testing.T) {
	base := mustHash(t, writeTree(t, sample)).Digest
	tests := []struct {
		name   string
		change func(map[string]string)
		same   bool
	}{
		{"same content elsewhere", func(map[string]string) {}, true},
		{"one byte changed", func(m map[string]string) { m["database/b/b.sqlite"] = "other bytez" }, false},
		{"file renamed", func(m map[string]string) { m["dev2.json"] = m["dev.json"]; delete(m, "dev.json") }, false},
		{"file moved to another directory", func(m map[string]string) {
			m["database/a/schema.sql"] = m["database/b/schema.sql"]
			delete(m, "database/b/schema.sql")
		}, false},
		{"empty file added", func(m map[string]string) { m["database/a/empty"] = "" }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{}
			for k, v := range sample {
				files[k] = v
			}
			tt.change(files)
			got := mustHash(t, writeTree(t, files)).Digest
			if (got == base) != tt.same {
				t.Errorf("digest %s vs %s: same = %v, want %v", got, base, got == base, tt.same)
			}
		})
	}
}

func TestSubtreeDigestIsItsNode(t *testing.T) {
	root := writeTree(t, sample)
	whole := mustHash(t, root)
	sub := mustHash(t, filepath.Join(root, "database"))
	for _, n := range whole.Nodes {
		if n.Path == "database" && n.Digest != sub.Digest {
			t.Errorf("node database = %s, hashing database/ alone = %s", n.Digest, sub.Digest)
		}
	}
}

func TestSingleFileDigestIsItsBLAKE3(t *testing.T) {
	for _, size := range []int{0, 100, 3 << 20} { // 3 MiB goes through mmap
		content := bytes.Repeat([]byte("x0"), size/2)
		p := filepath.Join(t.TempDir(), "f")
		os.WriteFile(p, content, 0o644)
		m := mustHash(t, p)
		if m.Digest != ledger.Sum(content) || m.Bytes != int64(len(content)) || m.Type != NodeFile {
			t.Errorf("size %d: digest %s, want %s", size, m.Digest, ledger.Sum(content))
		}
	}
}

func TestSymlinksAreRecordedNotFollowed(t *testing.T) {
	outside := writeTree(t, map[string]string{"secret": "v1"})
	root := writeTree(t, map[string]string{"a": "x"})
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	m1 := mustHash(t, root)
	os.WriteFile(filepath.Join(outside, "secret"), []byte("v2 changed"), 0o644)
	m2 := mustHash(t, root)
	if m1.Digest != m2.Digest {
		t.Error("changing a symlink's target outside the tree changed the tree digest: the link was followed")
	}
	var link *Node
	for i := range m1.Nodes {
		if m1.Nodes[i].Path == "link" {
			link = &m1.Nodes[i]
		}
	}
	if link == nil || link.Type != NodeLink || link.Target != filepath.Join(outside, "secret") {
		t.Errorf("link node = %+v", link)
	}
}

func TestRealSpiderDatabases(t *testing.T) {
	m := mustHash(t, "../testdata/spider/database")
	if m.Files < 19 {
		t.Fatalf("spider databases: %d files", m.Files)
	}
	for _, n := range m.Nodes {
		if n.Path == "concert_singer/concert_singer.sqlite" {
			b, err := os.ReadFile("../testdata/spider/database/concert_singer/concert_singer.sqlite")
			if err != nil {
				t.Fatal(err)
			}
			if n.Digest != ledger.Sum(b) {
				t.Errorf("concert_singer digest %s, want %s", n.Digest, ledger.Sum(b))
			}
			return
		}
	}
	t.Error("concert_singer.sqlite not in the manifest")
}
