package manifests

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rlgate/rlgate/ledger/untrusted"
)

// checkpoint is a checkpoint opened for reading: its files, its safetensors
// files with validated headers, and where each tensor lives. Opening reads
// headers only; tensor bytes are read by whoever hashes or diffs them.
type checkpoint struct {
	dir     string              // paths below are relative to dir
	files   []fileEntry         // every regular file, sorted by path
	shards  []*SafetensorsFile  // the files holding the tensors, sorted by path
	tensors map[string]tensorAt // by tensor name
}

type fileEntry struct {
	path string // slash-separated, relative to dir
	size int64
}

// tensorAt locates a tensor: its shard and its header entry.
type tensorAt struct {
	shard *SafetensorsFile
	info  TensorInfo
}

// openCheckpoint opens the checkpoint at path: a single .safetensors file, or
// a directory whose every regular file (symbolic links to files followed, as
// in a Hugging Face cache snapshot) belongs to the checkpoint. With an
// IndexFile at the top, the shards it names hold the tensors and must agree
// with it exactly; without one, the .safetensors files at any depth hold
// them and no tensor name may appear in two files.
func openCheckpoint(root string) (*checkpoint, error) {
	st, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("open checkpoint: %w", err)
	}
	c := &checkpoint{tensors: map[string]tensorAt{}}
	isDir := !st.Mode().IsRegular()
	if isDir {
		c.dir = root
		if c.files, err = listFiles(root); err != nil {
			return nil, err
		}
	} else {
		if !isSafetensors(root) {
			return nil, fmt.Errorf("open checkpoint %s: not a .safetensors file or a directory", root)
		}
		c.dir = filepath.Dir(root)
		c.files = []fileEntry{{filepath.Base(root), st.Size()}}
	}
	if err := c.load(isDir); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// load opens the safetensors files that hold the model's tensors and places
// the tensors. With an index, those are the shards its weight_map names; any
// other .safetensors file (a consolidated copy beside the shards, say) is
// not part of the model and is recorded as a plain file.
func (c *checkpoint) load(isDir bool) error {
	var wm map[string]string
	if isDir && slices.ContainsFunc(c.files, func(f fileEntry) bool { return f.path == IndexFile }) {
		var err error
		if wm, err = readIndex(c.abs(IndexFile), IndexFile); err != nil {
			return err
		}
	}
	named := map[string]bool{}
	for _, shard := range wm {
		named[shard] = true
	}
	for _, f := range c.files {
		if !isSafetensors(f.path) || wm != nil && !named[f.path] {
			continue
		}
		sf, err := openSafetensors(c.abs(f.path), f.path)
		if err != nil {
			return err
		}
		c.shards = append(c.shards, sf)
	}
	place := c.placeUnindexed
	if wm != nil {
		place = func() error { return c.placeIndexed(wm) }
	}
	if err := place(); err != nil {
		return err
	}
	if len(c.shards) == 0 {
		return fmt.Errorf("open checkpoint %s: %w", c.dir, ErrNoSafetensors)
	}
	return nil
}

// placeIndexed fills c.tensors from the shards, checking them against the
// index's weight_map: every shard it names exists, every tensor it lists is
// where it says, and no shard holds a tensor it does not list.
func (c *checkpoint) placeIndexed(wm map[string]string) error {
	byPath := map[string]*SafetensorsFile{}
	for _, sf := range c.shards {
		byPath[sf.Name] = sf
	}
	for _, sf := range c.shards {
		for _, t := range sf.Tensors {
			want, listed := wm[t.Name]
			switch {
			case !listed:
				return &SafetensorsError{File: sf.Name, Tensor: t.Name, Err: ErrBadIndex,
					Detail: "not listed in " + IndexFile}
			case want != sf.Name:
				return &SafetensorsError{File: sf.Name, Tensor: t.Name, Err: ErrBadIndex,
					Detail: fmt.Sprintf("%s places it in %q", IndexFile, want)}
			}
			c.tensors[t.Name] = tensorAt{sf, t}
		}
	}
	names := make([]string, 0, len(wm))
	for name := range wm {
		names = append(names, name)
	}
	slices.Sort(names) // report the same tensor on every run
	for _, name := range names {
		if _, ok := c.tensors[name]; ok {
			continue
		}
		shard := wm[name]
		detail := fmt.Sprintf("listed in weight_map, but shard %q is missing", shard)
		if byPath[shard] != nil {
			detail = fmt.Sprintf("listed in weight_map, but absent from shard %q", shard)
		}
		return &SafetensorsError{File: IndexFile, Tensor: name, Err: ErrBadIndex, Detail: detail}
	}
	return nil
}

// placeUnindexed fills c.tensors, refusing a name held by two files.
func (c *checkpoint) placeUnindexed() error {
	for _, sf := range c.shards {
		for _, t := range sf.Tensors {
			if prev, ok := c.tensors[t.Name]; ok {
				return &SafetensorsError{File: sf.Name, Tensor: t.Name, Err: ErrDuplicateTensor,
					Detail: fmt.Sprintf("also in %q, and no %s says which one counts", prev.shard.Name, IndexFile)}
			}
			c.tensors[t.Name] = tensorAt{sf, t}
		}
	}
	return nil
}

// listFiles returns every regular file under root, with slash paths
// relative to root, sorted. A symbolic link to a file counts as the file; a
// link to a directory or any other kind of file is an error, since the
// manifest could not say what it holds.
func listFiles(root string) ([]fileEntry, error) {
	var files []fileEntry
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		st, err := os.Stat(p) // follows links
		if err != nil {
			return err
		}
		switch {
		case st.IsDir():
			return fmt.Errorf("%s: link to a directory", p)
		case !st.Mode().IsRegular():
			return fmt.Errorf("%s is %s, not a regular file", p, untrusted.Kind(st.Mode()))
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		files = append(files, fileEntry{filepath.ToSlash(rel), st.Size()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list checkpoint %s: %w", root, err)
	}
	slices.SortFunc(files, func(a, b fileEntry) int { return strings.Compare(a.path, b.path) })
	return files, nil
}

func isSafetensors(p string) bool { return strings.HasSuffix(p, ".safetensors") }

func (c *checkpoint) abs(rel string) string { return filepath.Join(c.dir, filepath.FromSlash(rel)) }

// Close closes every shard.
func (c *checkpoint) Close() error {
	var errs []error
	for _, sf := range c.shards {
		errs = append(errs, sf.Close())
	}
	return errors.Join(errs...)
}
