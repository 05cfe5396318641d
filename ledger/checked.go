package ledger

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"github.com/rlgate/rlgate/ledger/records"
	"iter"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// Checked returns a read-only view of the ledger as of entry at (0: its
// head) that decisions read instead of the ledger itself.
//
// Opening the view reads every entry up to at once, re-hashes it and
// checks its link to the entry before it (and the first against this
// ledger's id). From then on every entry the view returns is read again
// and re-hashed against that walk, and every derived row it returns (runs,
// artifacts, outcomes, metric series) was derived from those entries into
// a private database, never read from the ledger's own tables. So a row
// someone edited in ledger.db (an outcome set to correct, a run's status
// set to ok, a body or hash column rewritten) cannot reach a gate, a report
// or a publish: either an entry disagrees with its hash, and the view
// refuses naming the first such seq (ErrTampered), or the rows come from
// the entries and not from the tables that were edited. Runs and artifacts
// are derived during the walk; a run's outcomes and metrics, the bulk of a
// ledger, when first asked for.
//
// The view shares the ledger's blob store (every blob read is re-hashed)
// and refuses appends; it must not outlive l. Close removes its private
// database. Checked of a view as of its own head is the view itself,
// whose Close then leaves it open for its owner.
func (l *Ledger) Checked(ctx context.Context, at int64) (*Ledger, error) {
	head, err := l.Head(ctx)
	if err != nil {
		return nil, err
	}
	if at == 0 {
		at = head.Seq
	}
	if at < 1 || at > head.Seq {
		return nil, fmt.Errorf("read ledger %s as of entry %d: %w: its head is entry %d", l.location(), at, ErrNotFound, head.Seq)
	}
	if l.chk != nil && at == head.Seq {
		v := *l
		v.borrowed = true
		return &v, nil
	}
	src := l
	if l.chk != nil {
		src = l.chk.src
	}
	scratch, err := os.MkdirTemp("", "rlgate-checked-")
	if err != nil {
		return nil, fmt.Errorf("read ledger %s: a private database to derive its rows in: %w. Try: set TMPDIR to a writable directory", l.location(), err)
	}
	db, err := sql.Open("sqlite", dsn(filepath.Join(scratch, dbName), "scratch"))
	v := &Ledger{dir: l.dir, db: db, id: l.id, scratch: scratch, shown: l.location(), blobs: l.blobs,
		chk: &checkedIndex{src: src, at: at, derived: map[string]bool{}, kept: map[string][]Entry{}}}
	if err == nil {
		err = v.walk(ctx)
	}
	if err != nil {
		if db != nil {
			db.Close()
		}
		os.RemoveAll(scratch)
		return nil, err
	}
	return v, nil
}

// checkedIndex is what a checked view knows of the entries up to at: each
// one's hash, kind and run (index seq-1), which the walk checked.
type checkedIndex struct {
	src    *Ledger
	at     int64
	hashes []Digest
	kinds  []string
	runs   []string
	// derived names the (kind, run) pairs whose rows are in the view's
	// database: a run's outcomes are derived when first read, one run at
	// a time (mu), as the database takes one writer.
	mu      sync.Mutex
	derived map[string]bool
	// series are each run's metric series by key, decoded when first
	// read: a run's decoding waits for no other run's, nor for outcomes.
	series Memo[*runSeries]
	// kept holds the entries of the kept kinds as the walk read and
	// checked them, by keptKey: derived and read from these bytes when
	// asked for, they are neither read nor hashed a second time.
	kept map[string][]Entry
}

func keptKey(kind, run string) string { return kind + "\x00" + run }

// runSeries are a run's metric entries as decoded (in ledger order), and
// each key's series, made when the key is first asked for: a run logs
// dozens of keys and the audits read a few, so most are never gathered.
type runSeries struct {
	entries []entryPoints
	byKey   map[string]*seriesPoints
}

// seriesPoints are one key's points of a run in ledger order, with the
// seq of the entry behind each; ids holds the key's number in each entry
// (-1 where the entry has no point of it).
type seriesPoints struct {
	ids  []int32
	once sync.Once
	pts  []MetricPoint
	seqs []int64
	err  error
}

// lazyPoint is a metric point whose value is parsed when its key is first
// asked for, so most values of an 800,000-point run are never parsed. A
// value still to parse is n bytes at off in its entry's body; n is 0 when
// val holds it (null, or a number parsed at once because it might
// overflow). Offsets instead of a slice keep a point at 24 bytes.
type lazyPoint struct {
	step   int64
	val    float64
	off, n uint32
}

// lazyKinds are derived only when a run's rows are first asked for: a
// run's outcomes into the view's database, its metric series in memory
// (see checkedSeries).
var lazyKinds = []string{records.KindOutcomes, records.KindMetrics}

// keptKinds are the kinds whose entries the view keeps as the walk read
// them: the lazy kinds, and trajectories, which a gate reads whole for
// every evaluation (the episodes' references into their blobs). Reading
// them again from the source cost a tenth of a gate.
var keptKinds = append([]string{records.KindTrajectories}, lazyKinds...)

// walk reads the entries 1..at of the source once, checking each, keeps
// those of the kept kinds, and derives the rows of every entry but the
// lazy kinds.
func (l *Ledger) walk(ctx context.Context) error {
	if _, err := l.db.ExecContext(ctx, derivedDDL); err != nil {
		return err
	}
	c := l.chk
	return l.applyEntries(ctx, l.walkEntries(ctx), func(e *Entry) bool {
		if slices.Contains(keptKinds, e.Kind) {
			k := keptKey(e.Kind, e.Run)
			c.kept[k] = append(c.kept[k], *e)
		}
		return !slices.Contains(lazyKinds, e.Kind)
	})
}

// walkEntries yields the entries 1..at of the source, each checked by
// checkLink and added to the view's index. The entries are read and
// hashed a page at a time on every core (see readPages); the links are
// checked here, in ledger order.
func (l *Ledger) walkEntries(ctx context.Context) iter.Seq2[Entry, error] {
	c := l.chk
	return func(yield func(Entry, error) bool) {
		c.hashes, c.kinds, c.runs = make([]Digest, 0, c.at), make([]string, 0, c.at), make([]string, 0, c.at)
		ctx, cancel := context.WithCancel(ctx)
		pages, done, wait := l.readPages(ctx, c.at)
		defer func() {
			cancel()
			wait()
		}()
		for _, ch := range pages {
			p := <-ch
			done()
			if p.err != nil {
				yield(Entry{}, fmt.Errorf("read ledger %s: %w", l.location(), p.err))
				return
			}
			for i := range p.entries {
				e, err := p.entries[i], p.errs[i]
				if err == nil {
					err = l.checkLink(&e, int64(len(c.hashes)), p.sums[i])
				}
				if err != nil {
					yield(Entry{}, err)
					return
				}
				c.hashes, c.kinds, c.runs = append(c.hashes, e.Hash), append(c.kinds, e.Kind), append(c.runs, e.Run)
				if !yield(e, nil) {
					return
				}
			}
			if err := ctx.Err(); err != nil {
				yield(Entry{}, err)
				return
			}
		}
		if last := int64(len(c.hashes)); last < c.at {
			yield(Entry{}, l.tampered(last+1, "is missing (the chain ends at entry %d)", last))
		}
	}
}

// walkPageSize is how many entries one read of the walk asks for: few,
// so that the reads spread over the cores even when a handful of large
// entries (a long run's metrics) hold most of a ledger's bytes.
const walkPageSize = 64

// walkPage is one read of the walk: the entries with seq in its range, as
// the source holds them, each with what its fields hash to (or why it
// could not be read).
type walkPage struct {
	entries []Entry
	sums    []Digest
	errs    []error
	err     error
}

// readPages reads the entries 1..at in pages of walkPageSize seqs, on
// every core, keeping at most a few pages ahead of the reader: page k
// arrives on pages[k], and the reader calls done after taking each. wait
// returns once no read is left running; call it after cancelling ctx.
//
// The bodies share the memory the database driver read them into (see
// readOnlyBytes): a walk's entries are hashed, derived and decoded, never
// written, and copying tens of megabytes of metrics once more cost as much
// as reading them.
func (l *Ledger) readPages(ctx context.Context, at int64) (pages []chan walkPage, done, wait func()) {
	n := int((at + walkPageSize - 1) / walkPageSize)
	pages = make([]chan walkPage, n)
	for i := range pages {
		pages[i] = make(chan walkPage, 1)
	}
	ahead := make(chan struct{}, 2*runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range n {
			select {
			case ahead <- struct{}{}:
			case <-ctx.Done():
				pages[i] <- walkPage{err: ctx.Err()}
				return
			}
			lo := int64(i) * walkPageSize
			wg.Go(func() { pages[i] <- l.readPage(ctx, lo, min(lo+walkPageSize, at)) })
		}
	})
	return pages, func() { <-ahead }, wg.Wait
}

// readPage reads the entries with seq in (lo, hi] and hashes each.
func (l *Ledger) readPage(ctx context.Context, lo, hi int64) walkPage {
	raw, err := queryRaw(ctx, l.chk.src.db, "WHERE seq > ? AND seq <= ? ORDER BY seq", lo, hi)
	if err != nil {
		return walkPage{err: err}
	}
	p := walkPage{entries: make([]Entry, len(raw)), sums: make([]Digest, len(raw)), errs: make([]error, len(raw))}
	for i, r := range raw {
		e, err := r.entryWith(readOnlyBytes(r.body))
		if err != nil {
			p.errs[i] = l.tampered(r.seq, "is unreadable: %v", err)
			continue
		}
		p.entries[i], p.sums[i] = e, computeHash(&e)
	}
	return p
}

// applyEntries derives, in one transaction, the rows of the entries that
// entries yields and keep accepts (every one when keep is nil) into the
// view's database.
func (l *Ledger) applyEntries(ctx context.Context, entries iter.Seq2[Entry, error], keep func(*Entry) bool) error {
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	d := newDeriver(ctx, tx, false) // the view's own SQLite database
	defer d.close()
	for e, err := range entries {
		if err != nil {
			return err
		}
		if keep != nil && !keep(&e) {
			continue
		}
		if err := d.apply(&e, nil); err != nil {
			return l.tampered(e.Seq, "cannot be read (%s): %v", e.Kind, err)
		}
	}
	if err := d.flush(); err != nil {
		return err
	}
	return tx.Commit()
}

// checkLink checks that e, whose fields hash to sum, is the entry after
// seq in the view: the next seq, linked to the hash the walk found for
// seq, hashing to its own hash,
// and, first of all, this ledger's genesis entry. Whether a body is
// canonical JSON is left to verify: whoever can write a body that hashes
// right can write a canonical one as well, so checking it here would cost
// time and stop nobody.
func (l *Ledger) checkLink(e *Entry, seq int64, sum Digest) error {
	var prev Digest
	if seq > 0 {
		prev = l.chk.hashes[seq-1]
	}
	switch {
	case e.Seq != seq+1:
		return l.tampered(seq+1, "is missing (the chain jumps from entry %d to %d)", seq, e.Seq)
	case e.Prev != prev:
		return l.tampered(e.Seq, "is not linked to entry %d: its prev is %s, entry %d hashes to %s", seq, e.Prev, seq, prev)
	case sum != e.Hash:
		return l.tampered(e.Seq, "does not match its hash: its kind, run, time, blobs or body were changed after it was written")
	case e.Seq == 1 && !isGenesisOf(e, l.id):
		return l.tampered(1, "is not this ledger's %s entry for ledger id %s", records.KindInit, l.id)
	}
	return nil
}

// checkRead checks an entry read again after the walk: it must be, byte
// for byte, the entry the walk checked at its seq.
func (l *Ledger) checkRead(e *Entry) error {
	c := l.chk
	if e.Seq < 1 || e.Seq > c.at {
		return l.tampered(e.Seq, "lies outside the entries 1..%d the view read", c.at)
	}
	if e.Hash != c.hashes[e.Seq-1] || computeHash(e) != e.Hash || (e.Seq > 1 && e.Prev != c.hashes[e.Seq-2]) {
		return l.tampered(e.Seq, "changed while it was being read: it no longer matches its hash")
	}
	return nil
}

// checkedEntries yields the entries of the view that match f: one run's
// entries of a kept kind as the walk read them, others each read from the
// source and checked against the walk; an entry the source no longer
// returns is an error too.
func (l *Ledger) checkedEntries(ctx context.Context, f Filter) iter.Seq2[Entry, error] {
	c := l.chk
	if f.Run != "" && slices.Contains(keptKinds, f.Kind) {
		return func(yield func(Entry, error) bool) {
			for _, e := range c.kept[keptKey(f.Kind, f.Run)] {
				if e.Seq > f.AfterSeq && !yield(e, nil) {
					return
				}
			}
		}
	}
	return func(yield func(Entry, error) bool) {
		var want []int64
		flush := func() bool {
			if len(want) == 0 {
				return true
			}
			where, args := "WHERE seq >= ? AND seq <= ?", []any{want[0], want[len(want)-1]}
			if f.Kind != "" {
				where, args = where+" AND kind = ?", append(args, f.Kind)
			}
			if f.Run != "" {
				where, args = where+" AND run = ?", append(args, f.Run)
			}
			got, err := queryEntries(ctx, c.src.db, where+" ORDER BY seq", args...)
			if err != nil {
				return yield(Entry{}, err)
			}
			for i, seq := range want {
				if i >= len(got) || got[i].Seq != seq {
					return yield(Entry{}, l.tampered(seq, "is no longer in the ledger as it was when the view read it"))
				}
				if err := l.checkRead(&got[i]); err != nil {
					return yield(Entry{}, err)
				}
				if !yield(got[i], nil) {
					return false
				}
			}
			want = want[:0]
			return true
		}
		for seq := max(f.AfterSeq, 0) + 1; seq <= c.at; seq++ {
			if (f.Kind != "" && c.kinds[seq-1] != f.Kind) || (f.Run != "" && c.runs[seq-1] != f.Run) {
				continue
			}
			if want = append(want, seq); len(want) == entryPage && !flush() {
				return
			}
		}
		flush()
	}
}

// derive makes sure the view's database holds run's rows of a lazy kind.
func (l *Ledger) derive(ctx context.Context, kind, run string) error {
	c := l.chk
	c.mu.Lock()
	defer c.mu.Unlock()
	key := keptKey(kind, run)
	if c.derived[key] {
		return nil
	}
	entries := func(yield func(Entry, error) bool) {
		for _, e := range c.kept[key] {
			if !yield(e, nil) {
				return
			}
		}
	}
	if err := l.applyEntries(ctx, entries, nil); err != nil {
		return err
	}
	c.derived[key] = true
	return nil
}

// checkedSeries returns one key's points of run, in ledger order. The
// first request for a run decodes its metrics entries, as the walk read
// and checked them, and keeps them: an audit or a report asks for several
// keys of one run, often several names for one quantity. A key's series
// is gathered from them when the key is first asked for.
func (l *Ledger) checkedSeries(ctx context.Context, run, key string) ([]MetricPoint, []int64, error) {
	c := l.chk
	rs, err := c.series.Get(ctx, run, func() (*runSeries, error) {
		// The entries decode on every core, and are kept in ledger order.
		es := c.kept[keptKey(records.KindMetrics, run)]
		rs := &runSeries{entries: make([]entryPoints, len(es)), byKey: map[string]*seriesPoints{}}
		err := ForEach(ctx, len(es), func(_ context.Context, i int) error {
			var err error
			if rs.entries[i], err = decodeLazy(es[i]); err != nil {
				return l.tampered(es[i].Seq, "cannot be read (%s): %v", es[i].Kind, err)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		for i, d := range rs.entries {
			for j, k := range d.keys {
				s := rs.byKey[k]
				if s == nil {
					s = &seriesPoints{ids: make([]int32, len(rs.entries))}
					for e := range s.ids {
						s.ids[e] = -1
					}
					rs.byKey[k] = s
				}
				s.ids[i] = int32(j)
			}
		}
		return rs, nil
	})
	if err != nil {
		return nil, nil, err
	}
	s := rs.byKey[key]
	if s == nil {
		return nil, nil, nil
	}
	s.once.Do(func() { s.err = l.gather(rs.entries, s, key) })
	return s.pts, s.seqs, s.err
}

// gather makes s, the series of key, from the run's decoded entries: its
// points counted first, so that the series is allocated once, at its
// size, and each value parsed as it is gathered.
func (l *Ledger) gather(entries []entryPoints, s *seriesPoints, key string) error {
	n := 0
	for i := range entries {
		if id := s.ids[i]; id >= 0 {
			n += entries[i].count(id)
		}
	}
	s.pts, s.seqs = make([]MetricPoint, 0, n), make([]int64, 0, n)
	for i := range entries {
		d := &entries[i]
		if id := s.ids[i]; id >= 0 {
			var err error
			if s.pts, err = d.appendKey(s.pts, id, key); err != nil {
				return l.tampered(d.seq, "cannot be read (%s): %v", records.KindMetrics, err)
			}
			for len(s.seqs) < len(s.pts) {
				s.seqs = append(s.seqs, d.seq)
			}
		}
	}
	s.ids = nil
	return nil
}

// entryPoints are the points of one metrics entry: keys in the order they
// first appear, and either the series of each key as decodeMetrics reads
// them, or (a body of version 1 in canonical() layout) per point its
// key's index in keys and the point with its value perhaps still to
// parse; body and seq are the entry's.
type entryPoints struct {
	seq    int64
	body   []byte
	keys   []string
	series []PackedSeries
	ids    []int32
	pts    []lazyPoint
}

// count is how many points of the key numbered id the entry holds.
func (d *entryPoints) count(id int32) int {
	if d.series != nil {
		return d.series[id].Len()
	}
	n := 0
	for _, k := range d.ids {
		if k == id {
			n++
		}
	}
	return n
}

// appendKey appends the points of the key numbered id, named key, to pts,
// parsing the values left to parse.
func (d *entryPoints) appendKey(pts []MetricPoint, id int32, key string) ([]MetricPoint, error) {
	if d.series != nil {
		s := d.series[id]
		for i := range s.Len() {
			pts = append(pts, s.At(i))
		}
		return pts, nil
	}
	for j, k := range d.ids {
		if k != id {
			continue
		}
		p := d.pts[j]
		v, ok := d.value(p)
		if !ok {
			return nil, fmt.Errorf("value %q of %s", d.body[p.off:p.off+p.n], key)
		}
		pts = append(pts, MetricPoint{Step: p.step, Key: key, Value: asRecorded(v)})
	}
	return pts, nil
}

// value is p's value, parsed from the body when it was left to parse.
func (d *entryPoints) value(p lazyPoint) (float64, bool) {
	if p.n == 0 {
		return p.val, true
	}
	return parseValue(d.body[p.off : p.off+p.n])
}

// decodeLazy reads the points of metrics entry e. A body of version 1 in
// canonical() layout is scanned without parsing the values that cannot
// fail to parse (see lazyPoint); any other body (version 2, or another
// layout) is read by decodeMetrics, as everywhere else.
func decodeLazy(e Entry) (entryPoints, error) {
	d := entryPoints{seq: e.Seq, body: e.Body}
	var ms metricsScan
	ok := ms.scan(e.Body, func(n int) {
		d.ids, d.pts = make([]int32, 0, n), make([]lazyPoint, 0, n)
	}, func(step int64, key int32, num []byte) bool {
		p := lazyPoint{step: step}
		// Only a number with an exponent or hundreds of digits can lie
		// outside float64, which decodeMetrics refuses: such a value is
		// parsed now, so that the entry is refused whichever key is read.
		if num == nil || len(num) > 300 || bytes.ContainsAny(num, "eE") {
			var ok bool
			if p.val, ok = parseValue(num); !ok {
				return false
			}
		} else {
			// num is a slice of the body: its offset is what its
			// capacity lacks of the body's.
			p.off, p.n = uint32(cap(e.Body)-cap(num)), uint32(len(num))
		}
		d.ids, d.pts = append(d.ids, key), append(d.pts, p)
		return true
	})
	if ok {
		d.keys = ms.keys.keys
		return d, nil
	}
	m, err := decodeMetrics(e.Body, nil)
	if err != nil {
		return entryPoints{}, err
	}
	d.ids, d.pts, d.series = nil, nil, m.Series
	d.keys = make([]string, len(m.Series))
	for i, s := range m.Series {
		d.keys[i] = s.Key
	}
	return d, nil
}

// checkedByHash finds the entry of the view whose hash starts with the
// hex digits p.
func (l *Ledger) checkedByHash(ctx context.Context, p string) (Entry, error) {
	var found []int64
	for i, h := range l.chk.hashes {
		if strings.HasPrefix(h.Hex(), p) {
			if found = append(found, int64(i+1)); len(found) == 2 {
				return Entry{}, fmt.Errorf("entry %s: %w: seq %d and %d both match; give more digits", p, ErrAmbiguous, found[0], found[1])
			}
		}
	}
	if len(found) == 0 {
		return Entry{}, fmt.Errorf("entry %s: %w", p, ErrNotFound)
	}
	return l.EntryBySeq(ctx, found[0])
}

// tampered is the error for an entry that fails its checks.
func (l *Ledger) tampered(seq int64, format string, args ...any) error {
	return &TamperedError{Seq: seq, Ledger: l.location(), Why: fmt.Sprintf(format, args...)}
}

// TamperedError says which entry of a ledger failed the checks a decision
// makes before it reads anything (see Checked). It wraps ErrTampered.
type TamperedError struct {
	Seq    int64
	Ledger string
	Why    string
}

func (e *TamperedError) Error() string {
	return fmt.Sprintf("entry %d of ledger %s %s. Nothing was decided. Try: rlgate verify --ledger %s", e.Seq, e.Ledger, e.Why, e.Ledger)
}

func (e *TamperedError) Unwrap() error { return ErrTampered }
