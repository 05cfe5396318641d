package metrics

import (
	"runtime"

	"google.golang.org/protobuf/encoding/protowire"
)

// parallelBytes is the size of W&B records from which a read parses them
// on every core: below it, starting goroutines costs more than it saves.
const parallelBytes = 4 << 20

// batchBytes is about how many bytes of records one batch holds: a few
// milliseconds of parsing, enough to hide the cost of handing it over.
const batchBytes = 1 << 20

// wandbBatches decodes the records of a large W&B read in batches: their
// history rows, most of a run's bytes, are parsed on several goroutines at
// once (historyParser.parseHistory needs no decoder state), and each batch
// is then decoded in file order by wandbDecoder.record with its rows
// already parsed. The points, stats, findings, cursor and errors are those
// a serialDecoder gives (TestWandBBatchesDecodeAsSerial): only the
// parsing moves. An import of 5 million points spent about a second
// parsing them on one core.
type wandbBatches struct {
	t        *Tailer
	filling  *wandbBatch
	inFlight []*wandbBatch // in file order
	free     []*wandbBatch
}

// wandbBatch is records read in a row, their bytes copied (the reader's
// buffers are reused), and their history rows once parsed.
type wandbBatch struct {
	data   []byte
	recs   []batchRecord
	rows   []historyRow
	parser historyParser
	done   chan struct{}
}

// batchRecord is one record of a batch: its bytes in data, the file offset
// after it, and its history rows in rows.
type batchRecord struct {
	lo, hi       int
	end          int64
	rowLo, rowHi int
}

func (w *wandbBatches) add(rec []byte, end int64) error {
	b := w.filling
	if b == nil {
		b = w.take()
		w.filling = b
	}
	b.recs = append(b.recs, batchRecord{lo: len(b.data), hi: len(b.data) + len(rec), end: end})
	b.data = append(b.data, rec...)
	if len(b.data) < batchBytes {
		return nil
	}
	w.filling = nil
	b.done = make(chan struct{})
	go b.parse()
	w.inFlight = append(w.inFlight, b)
	if len(w.inFlight) <= runtime.GOMAXPROCS(0) {
		return nil
	}
	return w.decodeOldest()
}

func (w *wandbBatches) drain() error {
	if b := w.filling; b != nil {
		w.filling = nil
		b.done = make(chan struct{})
		b.parse() // the last, partial batch: nothing is left to overlap with
		w.inFlight = append(w.inFlight, b)
	}
	for len(w.inFlight) > 0 {
		if err := w.decodeOldest(); err != nil {
			return err
		}
	}
	return nil
}

// take returns an empty batch, reusing the memory of a decoded one.
func (w *wandbBatches) take() *wandbBatch {
	if n := len(w.free); n > 0 {
		b := w.free[n-1]
		w.free = w.free[:n-1]
		return b
	}
	return &wandbBatch{data: make([]byte, 0, batchBytes+batchBytes/4)}
}

// parse parses the history rows of every record of b, in order.
func (b *wandbBatch) parse() {
	defer close(b.done)
	n := 0
	for i := range b.recs {
		r := &b.recs[i]
		r.rowLo = n
		// A walk that stops at a malformed field stops at the same field
		// when the record is decoded: it finds the rows parsed before it.
		_ = eachField(b.data[r.lo:r.hi], func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
			if num != wbHistory || typ != protowire.BytesType {
				return nil
			}
			if n == len(b.rows) {
				b.rows = append(b.rows, historyRow{})
			}
			b.parser.parseHistory(&b.rows[n], v)
			n++
			return nil
		})
		r.rowHi = n
	}
}

// decodeOldest waits for the oldest batch in flight to be parsed and
// decodes its records, moving the cursor past each.
func (w *wandbBatches) decodeOldest() error {
	b := w.inFlight[0]
	w.inFlight = w.inFlight[1:]
	<-b.done
	t := w.t
	for _, r := range b.recs {
		var pre []historyRow
		if r.rowHi > r.rowLo {
			pre = b.rows[r.rowLo:r.rowHi]
		}
		if err := t.wandb.record(&t.sk, t.run, b.data[r.lo:r.hi], pre); err != nil {
			return &ParseError{Path: t.path, Offset: t.cur.Offset, Err: err}
		}
		t.cur.Offset = r.end
	}
	b.data, b.recs = b.data[:0], b.recs[:0]
	w.free = append(w.free, b)
	return nil
}
