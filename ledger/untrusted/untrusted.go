// Package untrusted opens and reads files rlgate did not write and cannot
// vouch for: those a user names on the command line (a policy, a key, a
// run config, a metrics log) and those found in a directory someone hands
// over (a published bundle, a written report).
//
// Reading such a file must end, and what it returns must fit in memory.
// A FIFO blocks its reader until a writer comes (and then may never
// stop), a device such as /dev/zero never ends, and a sparse file claims
// gigabytes it does not hold on disk. So every open here refuses anything
// but a regular file, without blocking on it (O_NONBLOCK) and without
// opening a device before knowing it is one, and every whole-file read is
// capped: a file over its cap is refused before any of it is read, and
// nothing larger than the cap is ever allocated, even for a file that
// grows while it is read. Files read whole have a cap here (the Limit
// constants, documented in docs/PUBLISH.md, docs/GATE.md and
// docs/FORMAT.md); large files that are hashed or parsed as a stream
// (checkpoint weights, metrics logs) only need the regular-file check of
// Open.
//
// A user's own file may be a symbolic link to a regular file (Open and
// ReadFile follow it and check the target once open). A file inside a
// directory handed over (OpenIn, ReadFileIn) is never read through a
// symbolic link, and no path inside it may lead out of it (os.Root).
package untrusted

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Caps on files read whole: each far above what such a file holds when
// rlgate or the usual tools write it, and small enough to hold in memory.
const (
	// PolicyLimit caps a gate policy (--policy): a page of YAML.
	PolicyLimit = 1 << 20
	// ProtocolLimit caps a rollout protocol (--protocol) and PipelineLimit
	// a pipeline file (repro -f): pages of YAML or JSON.
	ProtocolLimit = 1 << 20
	PipelineLimit = 1 << 20
	// KeyLimit caps a PEM key or certificate chain (--key, --publish-key,
	// --public-key, --certificate-chain).
	KeyLimit = 1 << 20
	// ConfigLimit caps a stage's config file (run --config).
	ConfigLimit = 16 << 20
	// SignatureLimit caps a bundle's model.sig (or --signature), which
	// lists one digest per file of the model.
	SignatureLimit = 16 << 20
	// ProvenanceLimit caps a bundle's rlgate.provenance.json.
	ProvenanceLimit = 16 << 20
	// ManifestLimit caps a bundle's rlgate.manifest.json, which lists
	// every tensor of the checkpoint.
	ManifestLimit = 64 << 20
	// ReportLimit caps each file of a written report (report --check DIR).
	ReportLimit = 64 << 20
	// ExampleIDsLimit caps an example_ids.json (export rl --exclude).
	ExampleIDsLimit = 64 << 20
	// PredictionsLimit caps a predictions file (grade --predictions).
	PredictionsLimit = 256 << 20
	// SpiderSchemasLimit caps an import's spider_schemas.json, the
	// columns and foreign keys of each of its databases.
	SpiderSchemasLimit = 64 << 20
	// SourceLimit caps a benchmark's source file (data import: questions,
	// gold SQL, tables), the largest of which (BIRD's train.json) is tens
	// of megabytes.
	SourceLimit = 512 << 20
)

var (
	// ErrNotRegular is returned for a path that is not a regular file: a
	// FIFO, a device, a socket, a directory, or (inside a directory handed
	// over) a symbolic link.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge is returned for a file over the cap of a whole-file read.
	ErrTooLarge = errors.New("too large")
)

// Kind says what a file of mode m is, for an error a user reads: "a named
// pipe (FIFO)", "a device", "a symbolic link", ...
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "a " + m.Type().String()
}

// notRegular is the error for path, of mode m, which is not a regular
// file; a user's own file (userHint) can be written to one.
func notRegular(path string, m fs.FileMode, userHint bool) error {
	err := fmt.Errorf("%s is %s, %w", path, Kind(m), ErrNotRegular)
	if userHint {
		err = fmt.Errorf("%w; rlgate reads only regular files. Try: write it to a regular file and name that", err)
	}
	return err
}

// Open opens a file a user named for reading. A symbolic link is followed;
// whatever it names must be a regular file, checked before the open (so
// no device is opened) and again on the open file (so a file swapped in
// between is refused too).
func Open(path string) (*os.File, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, notRegular(path, fi.Mode(), true)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	return opened(f, path, fi, true)
}

// OpenIn opens the file name (slash-separated, relative) inside dir, a
// directory someone handed over. It refuses a name that is not a regular
// file, a symbolic link included, and a path that leads out of dir.
func OpenIn(dir, name string) (*os.File, error) {
	path := filepath.Join(dir, filepath.FromSlash(name))
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	fi, err := root.Lstat(name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, unwrapPath(err))
	}
	if !fi.Mode().IsRegular() {
		return nil, notRegular(path, fi.Mode(), false)
	}
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, unwrapPath(err))
	}
	return opened(f, path, fi, false)
}

// unwrapPath drops os.Root's *PathError wrapping (which names the syscall)
// for the one-line message of its cause.
func unwrapPath(err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Err
	}
	return err
}

// opened checks the file just opened at path against fi, what the path
// was before the open: a regular file, and the same one.
func opened(f *os.File, path string, fi fs.FileInfo, userHint bool) (*os.File, error) {
	now, err := f.Stat()
	switch {
	case err != nil:
	case !now.Mode().IsRegular():
		err = notRegular(path, now.Mode(), userHint)
	case !os.SameFile(fi, now):
		err = fmt.Errorf("%s was replaced while being opened, %w", path, ErrNotRegular)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ReadFile reads a whole file a user named (following a symbolic link, as
// Open does), refusing one of more than limit bytes.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(f, path, limit)
}

// ReadFileIn reads the whole file name inside dir (as OpenIn opens it),
// refusing one of more than limit bytes.
func ReadFileIn(dir, name string, limit int64) ([]byte, error) {
	f, err := OpenIn(dir, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAll(f, f.Name(), limit)
}

// readAll reads f to its end. A file whose size is over limit is refused
// before anything is read; one that grows past limit while it is read is
// refused once limit+1 bytes have come, and no buffer ever holds more.
func readAll(f *os.File, path string, limit int64) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s is %s, %w: rlgate reads at most %s of such a file", path, byteSize(fi.Size()), ErrTooLarge, byteSize(limit))
	}
	// Room for the whole file and one byte more, to see it end; a file
	// that reports no size (in /proc, say) starts small and grows.
	b := make([]byte, 0, min(max(fi.Size(), 512), limit)+1)
	r := io.LimitReader(f, limit+1)
	for {
		if len(b) == cap(b) {
			b = append(make([]byte, 0, min(2*int64(cap(b)), limit+1)), b...)
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if int64(len(b)) > limit {
			return nil, fmt.Errorf("%s grew while it was read, %w: rlgate reads at most %s of such a file", path, ErrTooLarge, byteSize(limit))
		}
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// byteSize writes n bytes for a reader: "512 B", "16 MiB", "4.0 GiB".
func byteSize(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	div, unit := int64(1024), 0
	for n/div >= 1024 && unit < 5 {
		div *= 1024
		unit++
	}
	if n%div == 0 {
		return fmt.Sprintf("%d %ciB", n/div, "KMGTPE"[unit])
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[unit])
}
