package ledger

import (
	"encoding/hex"
	"fmt"
	"io"
	"strings"

	"github.com/zeebo/blake3"
)

// Digest is a BLAKE3-256 digest. Every blob, entry and manifest in a ledger
// is named by one.
type Digest [32]byte

// digestPrefix is the algorithm tag printed before the hex form.
const digestPrefix = "blake3:"

// String returns the digest as "blake3:<64 hex>".
func (d Digest) String() string { return digestPrefix + hex.EncodeToString(d[:]) }

// Hex returns the 64 lower-case hex digits without the algorithm tag.
func (d Digest) Hex() string { return hex.EncodeToString(d[:]) }

// IsZero reports whether d is the all-zero digest, which names nothing.
func (d Digest) IsZero() bool { return d == Digest{} }

// MarshalText writes the "blake3:<hex>" form, so digests read well in JSON.
func (d Digest) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText accepts what ParseDigest accepts.
func (d *Digest) UnmarshalText(b []byte) error {
	p, err := ParseDigest(string(b))
	if err != nil {
		return err
	}
	*d = p
	return nil
}

// ParseDigest accepts "blake3:<64 hex>" or the bare 64 hex digits.
func ParseDigest(s string) (Digest, error) {
	var d Digest
	h := strings.TrimPrefix(s, digestPrefix)
	if len(h) != 64 {
		return d, fmt.Errorf("parse digest %q: want 64 hex digits", s)
	}
	if _, err := hex.Decode(d[:], []byte(h)); err != nil {
		return d, fmt.Errorf("parse digest %q: %w", s, err)
	}
	return d, nil
}

// Sum returns the BLAKE3-256 digest of b.
func Sum(b []byte) Digest { return Digest(blake3.Sum256(b)) }

// Hasher returns a streaming BLAKE3-256 hasher; finish it with SumDigest.
func Hasher() *blake3.Hasher { return blake3.New() }

// SumDigest finishes h into a Digest.
func SumDigest(h *blake3.Hasher) Digest {
	var d Digest
	h.Sum(d[:0])
	return d
}

// SumReader hashes everything r yields and returns the digest and byte count.
func SumReader(r io.Reader) (Digest, int64, error) {
	h := blake3.New()
	n, err := io.Copy(h, r)
	if err != nil {
		return Digest{}, n, err
	}
	return SumDigest(h), n, nil
}
