package manifests

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rlgate/rlgate/ledger"
)

// DatasetFormat names the dataset manifest layout; it is part of the
// manifest so a reader knows how its digest was defined.
const DatasetFormat = "rlgate.dataset/v1"

// Node types in a dataset manifest.
const (
	NodeFile = "file"
	NodeLink = "link"
	NodeDir  = "dir"
)

// Node is one file, symlink or directory of a dataset, by its slash path
// relative to the dataset root ("." for the root directory itself).
type Node struct {
	Path   string        `json:"path"`
	Type   string        `json:"type"`
	Size   int64         `json:"size,omitempty"`
	Digest ledger.Digest `json:"digest"`
	Target string        `json:"target,omitempty"` // a link's target, never followed
}

// DatasetManifest describes a file or a directory tree by digest. Digest is
// the file's BLAKE3 (the same value b3sum prints) for a single file, and the
// Merkle digest of the root directory for a tree. Files and Bytes count
// regular files only; Nodes lists "." first, then every path in byte order.
//
// NB: recorded, its canonical JSON is the manifest blob an artifact entry
// names; changing a field name, omission rule or the node order changes
// every recorded manifest digest (docs/FORMAT.md "Dataset manifests").
type DatasetManifest struct {
	Format string        `json:"format"`
	Root   string        `json:"root"` // as given; informational, not hashed
	Type   string        `json:"type"`
	Digest ledger.Digest `json:"digest"`
	Files  int           `json:"files"`
	Bytes  int64         `json:"bytes"`
	Nodes  []Node        `json:"nodes"`
}

// Domain tags for tree hashing.
const (
	dirTag  = "rlgate/tree/dir/v1\x00"
	linkTag = "rlgate/tree/link/v1\x00"
)

// HashTree builds the manifest of the file or directory at root. Files are
// hashed in parallel, largest first so the cores finish together; symlinks
// are recorded with their target and never followed, so a tree cannot pull
// in bytes from outside itself. Any other kind of file is an error.
// Canceling ctx stops every worker, and HashTree returns ctx's error.
func HashTree(ctx context.Context, root string) (*DatasetManifest, error) {
	fi, err := os.Lstat(root)
	if err != nil {
		return nil, fmt.Errorf("hash %s: %w", root, err)
	}
	m := &DatasetManifest{Format: DatasetFormat, Root: root}
	var nodes []Node
	switch {
	case fi.Mode().IsRegular():
		nodes = []Node{{Path: ".", Type: NodeFile, Size: fi.Size()}}
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, fmt.Errorf("hash %s: is a symlink; name its target instead", root)
	case fi.IsDir():
		if nodes, err = listTree(root); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("hash %s: unsupported file type %s", root, fi.Mode().Type())
	}
	if err := hashFiles(ctx, root, nodes); err != nil {
		return nil, err
	}
	if fi.IsDir() {
		nodes = digestDirs(nodes)
	}
	for _, n := range nodes {
		if n.Type == NodeFile {
			m.Files++
			m.Bytes += n.Size
		}
	}
	m.Type, m.Digest, m.Nodes = nodes[0].Type, nodes[0].Digest, nodes
	return m, nil
}

// listTree walks root without following links and returns its nodes with
// the root directory first and every path in byte order.
func listTree(root string) ([]Node, error) {
	var nodes []Node
	err := filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("hash %s: %w", p, err)
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		switch t := de.Type(); {
		case de.IsDir():
			nodes = append(nodes, Node{Path: rel, Type: NodeDir})
		case t&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return fmt.Errorf("hash %s: %w", p, err)
			}
			nodes = append(nodes, Node{Path: rel, Type: NodeLink, Target: target, Digest: linkDigest(target)})
		case t.IsRegular():
			fi, err := de.Info()
			if err != nil {
				return fmt.Errorf("hash %s: %w", p, err)
			}
			nodes = append(nodes, Node{Path: rel, Type: NodeFile, Size: fi.Size()})
		default:
			return fmt.Errorf("hash %s: unsupported file type %s", p, t)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(nodes, func(a, b Node) int { return comparePaths(a.Path, b.Path) })
	return nodes, nil
}

// comparePaths puts "." first, then orders by path bytes.
func comparePaths(a, b string) int {
	switch {
	case a == b:
		return 0
	case a == ".":
		return -1
	case b == ".":
		return 1
	}
	return strings.Compare(a, b)
}

// hashFiles fills in the digest of every file node, on all cores, largest
// file first so the cores finish together.
func hashFiles(ctx context.Context, root string, nodes []Node) error {
	var idx []int
	for i, n := range nodes {
		if n.Type == NodeFile {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(nodes[b].Size, nodes[a].Size) })
	return parallel(ctx, len(idx), func() func(context.Context, int) error {
		buf := make([]byte, readBufSize)
		return func(ctx context.Context, k int) error {
			n := &nodes[idx[k]]
			d, size, err := hashFile(ctx, filepath.Join(root, filepath.FromSlash(n.Path)), buf)
			if err != nil {
				return err
			}
			if size != n.Size {
				return fmt.Errorf("hash %s: size changed from %d to %d while hashing", n.Path, n.Size, size)
			}
			n.Digest = d
			return nil
		}
	})
}

// linkDigest names a symlink node by its target text.
//
// NB: the bytes hashed here define dataset digests; changing them breaks
// every recorded manifest.
func linkDigest(target string) ledger.Digest {
	h := ledger.Hasher()
	h.WriteString(linkTag)
	h.WriteString(target)
	return ledger.SumDigest(h)
}

// digestDirs computes directory digests bottom-up: a directory's digest is
// BLAKE3(dirTag || for each child in name order: type byte, name length
// (u64 BE), name, size (u64 BE), child digest). nodes is in path order with
// the root first; the result keeps that order.
//
// NB: the bytes hashed here define dataset digests; changing them breaks
// every recorded manifest.
func digestDirs(nodes []Node) []Node {
	children := map[string][]int{}
	for i, n := range nodes {
		if n.Path != "." {
			children[path.Dir(n.Path)] = append(children[path.Dir(n.Path)], i)
		}
	}
	var digest func(i int) ledger.Digest
	digest = func(i int) ledger.Digest {
		h := ledger.Hasher()
		h.WriteString(dirTag)
		// Lengths and sizes are u64 big-endian, as in entry hashes;
		// checkpoint digests (checkpoint.go) use little-endian. FORMAT.md
		// fixes each: do not unify them. The child digest is its 32 raw bytes.
		var buf [8]byte
		for _, c := range children[nodes[i].Path] {
			if nodes[c].Type == NodeDir {
				nodes[c].Digest = digest(c)
			}
			h.Write([]byte{nodes[c].Type[0]})
			name := path.Base(nodes[c].Path)
			binary.BigEndian.PutUint64(buf[:], uint64(len(name)))
			h.Write(buf[:])
			h.WriteString(name)
			binary.BigEndian.PutUint64(buf[:], uint64(nodes[c].Size))
			h.Write(buf[:])
			h.Write(nodes[c].Digest[:])
		}
		return ledger.SumDigest(h)
	}
	nodes[0].Digest = digest(0)
	return nodes
}
