//go:build unix

package manifests

import (
	"os"
	"syscall"
)

// mmapMin is the size below which reading is as fast as mapping.
const mmapMin = 1 << 20

// mapFile maps the first size bytes of f read-only. ok is false when the
// file is small or cannot be mapped; the caller then reads it instead.
func mapFile(f *os.File, size int64) (data []byte, unmap func(), ok bool) {
	if size < mmapMin || int64(int(size)) != size {
		return nil, nil, false
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, false
	}
	return data, func() { syscall.Munmap(data) }, true
}
