package ledger

import (
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unsafe"
)

// Record is what a caller appends: the ledger assigns seq, prev, hash and time.
type Record struct {
	Kind  string
	Run   string
	Body  any      // encoded as canonical JSON
	Blobs []Digest // blobs the entry refers to; each must already be stored
}

// Entry is one link of the hash chain, as stored.
type Entry struct {
	Seq   int64           `json:"seq"`
	Prev  Digest          `json:"prev"`
	Hash  Digest          `json:"hash"`
	Kind  string          `json:"kind"`
	Run   string          `json:"run,omitempty"`
	At    string          `json:"at"`
	Blobs []Digest        `json:"blobs,omitempty"`
	Body  json.RawMessage `json:"body"`
}

// InitBody is the body of the genesis entry; it binds the chain to the
// ledger id so two ledgers never share a chain.
type InitBody struct {
	LedgerID string `json:"ledger_id"`
	Schema   int    `json:"schema"`
}

// entryTag separates entry hashes from every other BLAKE3 use.
const entryTag = "rlgate/entry/v1\x00"

// computeHash returns the entry hash.
//
// NB: the bytes hashed here define the chain; changing them breaks every
// ledger. The layout is documented in docs/FORMAT.md ("Entry hash").
func computeHash(e *Entry) Digest {
	h := Hasher()
	h.WriteString(entryTag)
	h.Write(e.Prev[:])
	// seq and every length are u64 big-endian, as in tree digests
	// (manifests/tree.go); checkpoint digests use little-endian
	// (manifests/checkpoint.go). FORMAT.md fixes each: do not unify them.
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(e.Seq))
	h.Write(n[:])
	for _, s := range []string{e.Kind, e.Run, e.At} {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.WriteString(s)
	}
	binary.BigEndian.PutUint64(n[:], uint64(len(e.Blobs)))
	h.Write(n[:])
	for _, b := range e.Blobs {
		h.Write(b[:])
	}
	binary.BigEndian.PutUint64(n[:], uint64(len(e.Body)))
	h.Write(n[:])
	h.Write(e.Body)
	return SumDigest(h)
}

// kindRule is what an entry kind must be: a lower-case letter, then up
// to 63 of lower-case letters, digits and "_.-". validKind checks it by
// hand: as a regular expression, its bounded repetition compiled to 64
// copies at every rlgate start.
const kindRule = "^[a-z][a-z0-9_.-]{0,63}$"

func validKind(k string) bool {
	if len(k) == 0 || len(k) > 64 || k[0] < 'a' || k[0] > 'z' {
		return false
	}
	for i := 1; i < len(k); i++ {
		if c := k[i]; !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// timeFormat keeps entry times in UTC with fixed width, so they sort as text.
const timeFormat = "2006-01-02T15:04:05.000000000Z"

// Append adds records to the chain in one transaction: either all of them
// and their derived rows are committed, or none. It returns the entries as
// stored. Concurrent appenders, in this or other processes, serialise on
// SQLite's write lock, so the chain stays linear.
func (l *Ledger) Append(ctx context.Context, recs ...Record) ([]Entry, error) {
	var out []Entry
	err := l.withTx(ctx, func(tx *sql.Tx) error {
		var err error
		out, err = l.appendTx(ctx, tx, recs, nil)
		return err
	})
	if err != nil {
		if l.pg {
			if lost, ok := l.pgConnLost("append to ledger", err); ok {
				return nil, lost
			}
		}
		return nil, fmt.Errorf("append to ledger %s: %w", l.location(), err)
	}
	return out, nil
}

// appendTx appends recs in tx: it links each onto the head read inside tx
// (the chain rule: seq one more, prev the head's hash, hash computed) and
// derives its rows. at gives each record's time; nil stamps them all now.
// Copy passes the copied entries' own times, so that it reproduces their
// hashes through this one implementation of the chain rule.
func (l *Ledger) appendTx(ctx context.Context, tx *sql.Tx, recs []Record, at []string) ([]Entry, error) {
	prepared, err := l.prepareAll(ctx, recs)
	if err != nil {
		return nil, err
	}
	seq, prev, err := headTx(ctx, tx)
	if err != nil {
		return nil, err
	}
	d := newDeriver(ctx, tx, l.pg)
	defer d.close()
	now := time.Now().UTC().Format(timeFormat)
	for i := range prepared {
		e := &prepared[i]
		seq++
		e.Seq, e.Prev, e.At = seq, prev, now
		if at != nil {
			e.At = at[i]
		}
		e.Hash = computeHash(e)
		prev = e.Hash
	}
	// Rows go in insertChunk at a time: one statement per row spent more
	// time in the driver than in SQLite. Large bodies go fewer to a
	// statement (insertBytes): the driver copies a statement's arguments
	// into memory of its own, which it reuses from one statement to the
	// next, so 64 metric batches of 2 MB in one statement made it map and
	// first touch 128 MB, costlier than the copy itself.
	for start := 0; start < len(prepared); {
		end, size := start+1, len(prepared[start].Body)
		for end < len(prepared) && end-start < insertChunk && size+len(prepared[end].Body) <= insertBytes {
			size += len(prepared[end].Body)
			end++
		}
		chunk := prepared[start:end]
		start = end
		args := make([]any, 0, 8*len(chunk))
		for i := range chunk {
			e := &chunk[i]
			args = append(args, e.Seq, e.Prev.Hex(), e.Hash.Hex(), e.Kind, e.Run, e.At, joinDigests(e.Blobs), bodyText(e.Body))
		}
		if _, err := d.exec(insertEntries(len(chunk)), args...); err != nil {
			return nil, fmt.Errorf("insert entries %d..%d: %w", chunk[0].Seq, chunk[len(chunk)-1].Seq, err)
		}
	}
	for i := range prepared {
		if err := d.apply(&prepared[i], recs[i].Body); err != nil {
			return nil, fmt.Errorf("entry %d (%s): %w", prepared[i].Seq, prepared[i].Kind, err)
		}
	}
	if err := d.flush(); err != nil {
		return nil, err
	}
	return prepared, nil
}

// headTx reads the seq and hash of the last entry in tx: (0, zero digest)
// in a ledger without entries.
func headTx(ctx context.Context, tx *sql.Tx) (int64, Digest, error) {
	var seq int64
	var hash string
	err := tx.QueryRowContext(ctx, "SELECT seq, hash FROM entries ORDER BY seq DESC LIMIT 1").Scan(&seq, &hash)
	switch {
	case err == sql.ErrNoRows:
		return 0, Digest{}, nil
	case err != nil:
		return 0, Digest{}, err
	}
	d, err := ParseDigest(hash)
	if err != nil {
		return 0, Digest{}, fmt.Errorf("head entry %d: %w", seq, err)
	}
	return seq, d, nil
}

// bodyText hands an encoded body to the driver as TEXT without a copy:
// metric batches are megabytes each, the driver copies the text into
// SQLite's memory anyway, and nothing changes a body once it is encoded.
func bodyText(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// insertChunk is how many entries one INSERT statement writes, at most;
// insertBytes how many bytes of bodies, unless its first body is larger.
const (
	insertChunk = 64
	insertBytes = 1 << 20
)

// insertEntries is the INSERT statement for n entries.
func insertEntries(n int) string {
	return "INSERT INTO entries(seq, prev, hash, kind, run, at, blobs, body) VALUES " +
		strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?), ", n-1) + "(?, ?, ?, ?, ?, ?, ?, ?)"
}

// prepareAll prepares records on all cores when there are several: the
// canonical encoding of large bodies (metric batches) is the costly part of
// an append and each record's is independent. The first record refused
// stops the rest, as a canceled ctx does.
func (l *Ledger) prepareAll(ctx context.Context, recs []Record) ([]Entry, error) {
	prepared := make([]Entry, len(recs))
	err := ForEach(ctx, len(recs), func(_ context.Context, i int) error {
		var err error
		if prepared[i], err = l.prepare(recs[i]); err != nil {
			return fmt.Errorf("record %d (%s): %w", i, recs[i].Kind, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return prepared, nil
}

// prepare validates a record and encodes its body; it checks that every
// referenced blob is already stored (in a directory, as a regular file),
// which is the write-ordering rule.
func (l *Ledger) prepare(r Record) (Entry, error) {
	if !validKind(r.Kind) {
		return Entry{}, fmt.Errorf("%w: kind %q must match %s", ErrBadRecord, r.Kind, kindRule)
	}
	var body []byte
	var err error
	switch m := r.Body.(type) {
	case canonicalBody:
		body, err = m.canonical() // large batches: skip the generic re-encoding
	case CanonicalEncoder:
		w := &CanonicalWriter{}
		m.EncodeCanonical(w)
		body, err = w.Bytes()
	default:
		body, err = CanonicalJSON(r.Body)
	}
	if err != nil {
		return Entry{}, fmt.Errorf("%w: body: %v", ErrBadRecord, err)
	}
	if err := checkNames(r.Kind, r.Run, body); err != nil {
		return Entry{}, fmt.Errorf("%w: %w", ErrBadRecord, err)
	}
	blobs := slices.Clone(r.Blobs)
	slices.SortFunc(blobs, func(a, b Digest) int { return strings.Compare(a.Hex(), b.Hex()) })
	blobs = slices.Compact(blobs)
	for _, b := range blobs {
		if err := l.blobs.stored(context.Background(), b); err != nil {
			return Entry{}, fmt.Errorf("%w: %s: %w", ErrBlobMissing, b, err)
		}
	}
	return Entry{Kind: r.Kind, Run: r.Run, Blobs: blobs, Body: body}, nil
}

// joinDigests stores a blob list as space-separated hex, readable in the
// sqlite3 shell.
func joinDigests(ds []Digest) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = d.Hex()
	}
	return strings.Join(parts, " ")
}

func splitDigests(s string) ([]Digest, error) {
	if s == "" {
		return nil, nil
	}
	var out []Digest
	for _, f := range strings.Fields(s) {
		d, err := ParseDigest(f)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}
