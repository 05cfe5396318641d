package reproduce

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/manifests"
	"github.com/rlgate/rlgate/stages/runner"
)

// layInput lays out one recorded input under the work directory and
// returns the path the stage gets. An input the work directory already
// holds was written by a stage reproduced before: it must have the
// recorded digest. Otherwise it is copied from the recorded path when
// that still has the recorded digest, or, for a tree, file by file from
// the blob store. An input outside the stage's directory is used where it
// is, when its digest still matches. Anything else is refused, naming the
// input and both digests.
func layInput(ctx context.Context, l *ledger.Ledger, lo layout, a runner.ArtifactBody) (string, error) {
	src := lo.recorded(a.Path)
	dst, inside := lo.place(a.Path)
	if !inside {
		now, err := digestOf(ctx, src)
		if err != nil {
			return "", err
		}
		if now != a.Digest.String() {
			return "", refuse("input %s (%s, outside the stage's directory, used where it is): recorded %s, now %s", a.Name, src, a.Digest, now)
		}
		return src, nil
	}
	if _, err := os.Lstat(dst); err == nil {
		now, err := digestOf(ctx, dst)
		if err != nil {
			return "", err
		}
		if now != a.Digest.String() {
			return "", refuse("input %s (%s): recorded %s, but the stage reproduced before wrote %s", a.Name, a.Path, a.Digest, now)
		}
		return dst, nil
	}
	now, err := digestOf(ctx, src)
	if err != nil {
		return "", err
	}
	if now == a.Digest.String() {
		if err := copyPath(src, dst); err != nil {
			return "", fmt.Errorf("input %s: %w", a.Name, err)
		}
	} else {
		ok, err := fromBlobs(l, a, dst)
		if err != nil {
			return "", fmt.Errorf("input %s: %w", a.Name, err)
		}
		if !ok {
			return "", refuse("input %s (%s): recorded %s, now %s, and the blob store holds no copy of it", a.Name, src, a.Digest, now)
		}
	}
	laid, err := digestOf(ctx, dst)
	if err != nil {
		return "", err
	}
	if laid != a.Digest.String() {
		return "", refuse("input %s (%s): recorded %s, laid out as %s (it changed while being copied)", a.Name, src, a.Digest, laid)
	}
	return dst, nil
}

// digestOf is path's digest as runs record it, or "missing".
func digestOf(ctx context.Context, path string) (string, error) {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return "missing", nil
	}
	dg, err := runner.DigestPath(ctx, path)
	if err != nil {
		return "", err
	}
	return dg.Digest.String(), nil
}

// fromBlobs writes a recorded tree or file at dst from the blob store, file
// by file from its manifest; false when the input is not a tree or a file
// it holds is not in the store.
func fromBlobs(l *ledger.Ledger, a runner.ArtifactBody, dst string) (bool, error) {
	if a.Kind != records.ArtifactDataset || a.Manifest == nil {
		return false, nil
	}
	m, err := readManifest[manifests.DatasetManifest](l, *a.Manifest)
	if err != nil || m == nil {
		return false, err
	}
	for _, n := range m.Nodes {
		if n.Type != manifests.NodeFile {
			continue
		}
		r, err := l.OpenBlob(n.Digest)
		if err != nil {
			return false, nil
		}
		r.Close()
	}
	for _, n := range m.Nodes {
		p := filepath.Join(dst, filepath.FromSlash(n.Path))
		switch n.Type {
		case manifests.NodeDir:
			err = os.MkdirAll(p, 0o755)
		case manifests.NodeLink:
			err = os.Symlink(n.Target, p)
		case manifests.NodeFile:
			err = blobTo(l, n.Digest, p)
		}
		if err != nil {
			return false, err
		}
	}
	return true, nil
}

// readManifest reads a manifest blob; nil when the store lacks it.
func readManifest[T any](l *ledger.Ledger, d ledger.Digest) (*T, error) {
	raw, err := l.ReadBlob(d)
	if err != nil {
		return nil, nil
	}
	var m T
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("manifest blob %s: %w", d, err)
	}
	return &m, nil
}

// blobTo writes blob d to the file p.
func blobTo(l *ledger.Ledger, d ledger.Digest, p string) error {
	r, err := l.OpenBlob(d)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return writeFile(p, r, 0o644)
}

// layConfig lays out a recorded config file: from its recorded path when
// the file there is the one read (the digest recorded before redaction,
// when secrets were redacted), else from the blob store when nothing was
// redacted from it. A changed config with secrets in it is refused: the
// ledger keeps it only with the secrets masked.
func layConfig(l *ledger.Ledger, lo layout, a runner.ArtifactBody) (string, error) {
	src := lo.recorded(a.Path)
	dst, inside := lo.place(a.Path)
	want := a.Digest
	if a.Original != nil {
		want = *a.Original
	}
	raw, err := os.ReadFile(src)
	if err == nil && ledger.Sum(raw) == want {
		if !inside {
			return src, nil
		}
		return dst, writeFile(dst, bytes.NewReader(raw), 0o644)
	}
	now := "missing"
	if err == nil {
		now = ledger.Sum(raw).String()
	}
	switch {
	case !inside:
		return "", refuse("config %s (outside the stage's directory, used where it is): recorded %s, now %s", src, want, now)
	case a.Original != nil:
		return "", refuse("config %s: recorded %s, now %s; the ledger keeps it only with its secrets (%v) masked. Try: restore the file", a.Path, want, now, a.Redacted)
	}
	return dst, blobTo(l, a.Digest, dst)
}

// copyPath copies a file or a tree (links as links) from src to dst.
func copyPath(src, dst string) error {
	return filepath.WalkDir(src, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case de.IsDir():
			return os.MkdirAll(to, 0o755)
		case de.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		}
		fi, err := de.Info()
		if err != nil {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		return writeFile(to, f, fi.Mode().Perm())
	})
}

func writeFile(p string, r io.Reader, perm fs.FileMode) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
