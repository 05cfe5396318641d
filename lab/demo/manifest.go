package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/manifests"
)

// ManifestFile lists, in the demo's directory, every file the demo wrote
// there with its digest, and the head of the demo's ledger when it
// stopped. It is what lets --force replace the demo's files and nothing
// else: a file not in it, or changed since, is the user's, and so is an
// entry after its head.
const ManifestFile = ".rlgate-demo.json"

// manifestFormat names the manifest's layout.
const manifestFormat = "rlgate-demo-manifest/1"

// maxManifest bounds what is read of a manifest, which may have been
// written by anyone; the demo's lists a few hundred files.
const maxManifest = 16 << 20

// Manifest is the content of ManifestFile.
type Manifest struct {
	Format string `json:"format"`
	// Files maps each file's path (slash-separated, relative to the
	// directory) to its BLAKE3 digest.
	Files map[string]ledger.Digest `json:"files"`
	// Links maps each symbolic link's path to its target.
	Links map[string]string `json:"links,omitempty"`
	// Head is the demo's ledger's last entry when the demo stopped; nil
	// when the ledger had none.
	Head *ledger.Head `json:"ledger_head,omitempty"`
}

// ledgerFile tells whether rel (slash-separated, relative to the demo's
// directory) is one of the ledger's own database or lock files (see
// ledger/ledger.go and ledger/run.go), which change with every entry and
// every command: the manifest's head stands for them instead of a digest.
func ledgerFile(rel string) bool {
	in, ok := strings.CutPrefix(rel, ledger.DefaultDir+"/")
	return ok && (strings.HasPrefix(in, "ledger.db") && !strings.Contains(in, "/") || strings.HasPrefix(in, "locks/"))
}

// walkFiles calls fn for every file and symbolic link under dir but the
// manifest, by slash-separated relative path.
func walkFiles(dir string, fn func(rel, path string, d fs.DirEntry) error) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if rel = filepath.ToSlash(rel); rel == ManifestFile {
			return nil
		}
		return fn(rel, p, d)
	})
}

// Record writes dir's manifest: every file under it is the demo's, as it
// is now, and so is every entry of its ledger. The demo records one when
// its directory is laid out and again when it stops, however it stops.
func Record(ctx context.Context, dir string) error {
	m := Manifest{Format: manifestFormat, Files: map[string]ledger.Digest{}, Links: map[string]string{}}
	err := walkFiles(dir, func(rel, p string, d fs.DirEntry) error {
		switch {
		case ledgerFile(rel):
		case d.Type()&fs.ModeSymlink != 0:
			t, err := os.Readlink(p)
			m.Links[rel] = t
			return err
		case d.Type().IsRegular():
			h, _, err := manifests.HashFile(ctx, p)
			m.Files[rel] = h
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("demo manifest: %w", err)
	}
	if m.Head, err = demoHead(ctx, dir); err != nil {
		return err
	}
	b, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, ManifestFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("demo manifest: %w", err)
	}
	return os.Rename(tmp, filepath.Join(dir, ManifestFile))
}

// demoHead is the head of dir's ledger: nil when it has none or no entry.
func demoHead(ctx context.Context, dir string) (*ledger.Head, error) {
	ldir := filepath.Join(dir, ledger.DefaultDir)
	if _, err := os.Stat(ldir); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	l, err := ledger.OpenReadOnly(ctx, ldir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	h, err := l.Head(ctx)
	if errors.Is(err, ledger.ErrNotFound) {
		return nil, nil
	}
	return &h, err
}

// readManifest reads dir's manifest; nil when there is none.
func readManifest(dir string) (*Manifest, error) {
	f, err := os.Open(filepath.Join(dir, ManifestFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxManifest+1))
	if err != nil {
		return nil, err
	}
	var m Manifest
	if len(b) > maxManifest || json.Unmarshal(b, &m) != nil || m.Format != manifestFormat {
		return nil, fmt.Errorf("%s is not a demo manifest this rlgate reads", ManifestFile)
	}
	return &m, nil
}

// sortOut splits what is under dir by the manifest m: ours, the paths of
// the files the demo wrote (listed, unchanged) and of the ledger's own
// files; theirs, what the demo did not write: files m does not list or
// that changed since (by path, sorted), and the ledger's entries after
// m's head ("ledger entries 120–123").
func sortOut(ctx context.Context, dir string, m *Manifest) (ours, theirs []string, err error) {
	err = walkFiles(dir, func(rel, p string, d fs.DirEntry) error {
		// A manifest's temporary file is what a Record killed mid-write left.
		mine := ledgerFile(rel) || rel == ManifestFile+".tmp"
		switch {
		case mine:
		case d.Type()&fs.ModeSymlink != 0:
			t, err := os.Readlink(p)
			mine = err == nil && m.Links[rel] == t && t != ""
		case d.Type().IsRegular():
			want, ok := m.Files[rel]
			h, _, err := manifests.HashFile(ctx, p)
			mine = ok && err == nil && h == want
		}
		if mine {
			ours = append(ours, rel)
		} else {
			theirs = append(theirs, rel)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	head, err := demoHead(ctx, dir)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case head == nil || m.Head != nil && *head == *m.Head:
	case m.Head == nil || head.LedgerID != m.Head.LedgerID:
		theirs = append(theirs, fmt.Sprintf("ledger entries 1–%d", head.Seq))
	case head.Seq <= m.Head.Seq:
		theirs = append(theirs, fmt.Sprintf("ledger entry %d (rewritten)", head.Seq))
	case head.Seq == m.Head.Seq+1:
		theirs = append(theirs, fmt.Sprintf("ledger entry %d", head.Seq))
	default:
		theirs = append(theirs, fmt.Sprintf("ledger entries %d–%d", m.Head.Seq+1, head.Seq))
	}
	slices.Sort(theirs)
	return ours, theirs, nil
}

// removeDemo deletes the files ours names under dir, then every
// directory under it, deepest first, which must be empty by then (a file
// that appeared meanwhile stops it rather than being deleted), and the
// manifest last, so an interrupted removal can be run again. dir stays.
func removeDemo(dir string, ours []string) error {
	for _, rel := range ours {
		if err := os.Remove(filepath.Join(dir, filepath.FromSlash(rel))); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && p != dir {
			dirs = append(dirs, p)
		}
		return err
	})
	if err != nil {
		return err
	}
	for _, d := range slices.Backward(dirs) {
		if err := os.Remove(d); err != nil {
			return err
		}
	}
	return os.Remove(filepath.Join(dir, ManifestFile))
}
