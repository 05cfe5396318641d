package dataset

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
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/ledger/untrusted"
	"github.com/rlgate/rlgate/manifests"
)

// RecordedLimit caps a recorded file read whole (tasks, gold, a dataset's
// manifest): a tasks file with every database's schema rendered into its
// tasks runs to hundreds of megabytes for BIRD's training split.
const RecordedLimit = 1 << 30

// EnvDataRoot sets --data-root (comma-separated directories).
const EnvDataRoot = "RLGATE_DATA_ROOT"

type dataRootsKey struct{}

// WithDataRoots returns ctx carrying dirs, the --data-root directories
// where this machine keeps the large files a ledger recorded elsewhere
// (databases, checkpoints). They travel in the context rather than in an
// audit's options because where the files lie is no part of any decision:
// the options are recorded in a verdict, which must re-derive the same on
// every machine, and every reader down to a re-derivation needs the roots.
func WithDataRoots(ctx context.Context, dirs []string) context.Context {
	return context.WithValue(ctx, dataRootsKey{}, slices.Clone(dirs))
}

// DataRoots returns the directories WithDataRoots put in ctx.
func DataRoots(ctx context.Context) []string {
	dirs, _ := ctx.Value(dataRootsKey{}).([]string)
	return dirs
}

// Places lists where a file or directory the ledger recorded at path may
// lie now, in the order they are tried: under each data root, the tails of
// the recorded path from the longest to the last element alone (for
// /home/u/exp/data/rl under DIR: DIR/home/u/exp/data/rl, DIR/u/exp/data/rl,
// ..., DIR/rl), then the recorded path itself (a relative one from the
// working directory). A tail never climbs out of its root: only the part
// after the path's last ".." is used, and at most its last 32 elements.
// Whatever is found there is trusted only as far as its digest matches
// the recorded one.
func Places(ctx context.Context, path string) []string {
	rel := filepath.ToSlash(filepath.Clean(strings.TrimPrefix(path, filepath.VolumeName(path))))
	parts := strings.Split(strings.TrimLeft(rel, "/"), "/")
	for i := len(parts) - 1; i >= 0; i-- {
		if parts[i] == ".." {
			parts = parts[i+1:]
			break
		}
	}
	// A path read from a ledger row may be made long to make the tails
	// many: only the last maxTail elements count.
	parts = parts[max(0, len(parts)-maxTail):]
	var out []string
	for _, root := range DataRoots(ctx) {
		for i := range parts {
			if parts[i] != "" && parts[i] != "." {
				out = append(out, filepath.Join(root, filepath.Join(parts[i:]...)))
			}
		}
	}
	return append(out, path)
}

// maxTail bounds how many trailing elements of a recorded path Places
// tries under a data root; real paths have a dozen or so.
const maxTail = 32

// ErrNotFound is wrapped by the error of a recorded file found nowhere.
var ErrNotFound = errors.New("not found")

// ReadRecorded returns the bytes of the file the ledger recorded at path
// with digest want: from the ledger's blob store when it holds them
// (rlgate data import keeps tasks, gold, Spider schemas and manifest
// there), else from the first of Places whose bytes have that digest. A
// file found only with other bytes is refused naming it and both digests;
// one found nowhere (ErrNotFound) is named with its digest and where it
// was recorded.
func ReadRecorded(ctx context.Context, l *ledger.Ledger, path string, want ledger.Digest) ([]byte, error) {
	if b, err := readBlob(l, want); !errors.Is(err, ledger.ErrNotFound) {
		return b, err
	}
	var changed error
	for _, p := range Places(ctx, path) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		b, err := untrusted.ReadFile(p, RecordedLimit)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			if changed == nil {
				changed = err
			}
		case ledger.Sum(b) == want:
			return b, nil
		case changed == nil:
			changed = fmt.Errorf("%s has digest %s, not the %s the ledger recorded; it was changed since", p, ledger.Sum(b), want)
		}
	}
	if changed != nil {
		return nil, changed
	}
	return nil, fmt.Errorf("%s (%s) is neither in the blob store nor where it was recorded%s: %w. Try: --data-root DIR, a directory holding a copy of it",
		path, want, underRoots(ctx), ErrNotFound)
}

// readBlob reads the blob d, refusing one over RecordedLimit.
func readBlob(l *ledger.Ledger, d ledger.Digest) ([]byte, error) {
	r, err := l.OpenBlob(d)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, RecordedLimit+1))
	if err == nil && len(b) > RecordedLimit {
		err = fmt.Errorf("blob %s is over %d bytes, more than rlgate reads of a recorded file", d, RecordedLimit)
	}
	return b, err
}

// FindDir returns where the directory the ledger recorded at path lies
// now: the first of Places holding every file of rels (slash paths
// relative to it), else path itself, whose missing files the caller then
// reports (with MissingHint). The files' digests are the caller's to
// check: a database is hashed once, where it is used.
func FindDir(ctx context.Context, path string, rels []string) string {
	for _, p := range Places(ctx, path) {
		if !slices.ContainsFunc(rels, func(rel string) bool {
			fi, err := os.Stat(filepath.Join(p, filepath.FromSlash(rel)))
			return err != nil || !fi.Mode().IsRegular()
		}) {
			return p
		}
	}
	return path
}

// MissingHint is what to do about files missing under a directory the
// ledger recorded, for the end of a message.
func MissingHint(ctx context.Context) string {
	return fmt.Sprintf("; looked for where they were recorded%s. Try: --data-root DIR, a directory holding a copy of them", underRoots(ctx))
}

// underRoots says which data roots were searched, for a message.
func underRoots(ctx context.Context) string {
	roots := DataRoots(ctx)
	if len(roots) == 0 {
		return " (no --data-root given)"
	}
	return " or under --data-root " + strings.Join(roots, ", ")
}

// Record records the import written to dir as an artifact of no run (role
// dataset, kind benchmark, by the tasks file's digest) whose manifest blob
// is m, naming as blobs the tasks and gold files Keep stores: what rlgate
// data import leaves in the ledger.
func (m *Manifest) Record(ctx context.Context, l *ledger.Ledger, dir string) (ledger.Entry, error) {
	kept, err := m.Keep(l, dir)
	if err != nil {
		return ledger.Entry{}, err
	}
	return l.RecordArtifact(ctx, "", ledger.Artifact{Role: records.RoleDataset, Name: m.Dataset, Kind: records.ArtifactBenchmark, Digest: m.Tasks.Digest}, m, kept...)
}

// Keep stores the tasks, gold and Spider schemas files the import wrote
// into dir in the ledger's blob store and returns their digests, for the
// import's entry to name (the manifest, which manifest.json holds byte
// for byte, is the entry's own blob): a gate, audit or report on another machine, or after
// the directory moved, reads them back by digest (ReadRecorded). A file
// whose bytes are no longer those the manifest recorded is refused.
func (m *Manifest) Keep(l *ledger.Ledger, dir string) ([]ledger.Digest, error) {
	var kept []ledger.Digest
	files := []FileRef{m.Tasks, m.Gold}
	if m.SpiderSchemas != nil {
		files = append(files, FileRef{Path: SpiderSchemasFile, Digest: m.SpiderSchemas.Digest})
	}
	for _, f := range files {
		path := filepath.Join(dir, f.Path)
		r, err := untrusted.Open(path)
		if err != nil {
			return nil, err
		}
		d, _, err := l.PutBlob(r)
		r.Close()
		if err != nil {
			return nil, err
		}
		if d != f.Digest {
			return nil, fmt.Errorf("%s changed while it was imported (digest %s, written as %s). Try: the import again, with nothing else writing to %s", path, d, f.Digest, dir)
		}
		kept = append(kept, d)
	}
	return kept, nil
}

// InputManifest returns the import manifest of a stage run's input
// recorded at path with the tree manifest blob tree (rlgate run --in), or
// nil when the input is not a directory rlgate data import wrote. The
// manifest.json is read by the digest the tree manifest gives it
// (ReadRecorded: the import's own manifest blob holds the same bytes), so
// the input need not be where it was recorded.
func InputManifest(ctx context.Context, l *ledger.Ledger, path string, tree ledger.Digest) (*Manifest, error) {
	raw, err := l.ReadBlob(tree)
	if err != nil {
		return nil, err
	}
	var tm manifests.DatasetManifest
	if err := json.Unmarshal(raw, &tm); err != nil {
		return nil, fmt.Errorf("input %s: manifest blob %s: %w", path, tree, err)
	}
	i := slices.IndexFunc(tm.Nodes, func(n manifests.Node) bool { return n.Path == ManifestFile && n.Type == manifests.NodeFile })
	if tm.Format != manifests.DatasetFormat || i < 0 {
		return nil, nil
	}
	name := filepath.Join(path, ManifestFile)
	if raw, err = ReadRecorded(ctx, l, name, tm.Nodes[i].Digest); err != nil {
		return nil, err
	}
	var m Manifest
	if err := jsonUnmarshalStrict(raw, &m); err != nil || m.Format != ManifestFormat {
		return nil, nil // a manifest.json of some other tool
	}
	return &m, nil
}
