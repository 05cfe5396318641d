package manifests

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/rlgate/rlgate/ledger"
)

// readBufSize is the read size for hashing files: large reads keep BLAKE3's
// SIMD lanes full and cost few syscalls.
const readBufSize = 1 << 20

// HashFile returns the BLAKE3-256 digest and size of the file at path.
func HashFile(path string) (ledger.Digest, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return ledger.Digest{}, 0, fmt.Errorf("hash file: %w", err)
	}
	defer f.Close()
	h := ledger.Hasher()
	buf := make([]byte, readBufSize)
	var n int64
	for {
		k, err := f.Read(buf)
		if k > 0 {
			h.Write(buf[:k])
			n += int64(k)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return ledger.Digest{}, n, fmt.Errorf("hash file %s: %w", path, err)
		}
	}
	return ledger.SumDigest(h), n, nil
}
