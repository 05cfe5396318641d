package metrics

import (
	"bytes"
	"strconv"
)

// consoleSep separates the pairs of a veRL console line:
// "step:3 - actor/lr:1e-06 - critic/score/mean:0.25".
var consoleSep = []byte(" - ")

// consoleDecoder reads veRL console output (its "console" logger prints one
// line per step). A step record may continue on the next line when a line
// ends with the separator or the next one starts with it, as happens when a
// log collector wraps long lines; a record is therefore complete only when
// the next line has arrived or the writer is done.
type consoleDecoder struct {
	open  bool   // a record is being built in the sink
	from  Cursor // where the open record's first line starts
	step  int64
	cont  bool   // the open record's last line ended with a separator
	clean []byte // scratch for a line without colour codes
}

func (d *consoleDecoder) line(sk *sink, b []byte, at Cursor) error {
	b = bytes.TrimSuffix(b, []byte{'\r'})
	if bytes.IndexByte(b, '\r') < 0 {
		d.part(sk, b, at)
		return nil
	}
	// A carriage return redraws the terminal line (progress bars do it), so
	// each part is a line of its own. A record does not continue past such a
	// line: a cursor can only point at a line's start, and reparsing the
	// line for an open record would repeat the records before it.
	for part := range bytes.SplitSeq(b, []byte{'\r'}) {
		if len(part) > 0 {
			d.part(sk, part, at)
		}
	}
	d.flush(sk)
	return nil
}

func (d *consoleDecoder) part(sk *sink, b []byte, at Cursor) {
	d.clean = stripANSI(d.clean[:0], b)
	text := trimRayDecoration(d.clean)
	if len(text) == 0 {
		d.flush(sk)
		sk.stats.Ignored++
		return
	}
	if step, rest, ok := cutStep(text); ok {
		// The open record's step again (a line redrawn after a carriage
		// return, or printed twice) continues that record, so a key it
		// repeats follows the one rule for repeats: the last write wins.
		if !d.open || step != d.step {
			d.flush(sk)
			sk.begin()
			d.open, d.from, d.step = true, at, step
		}
		d.pairs(sk, rest)
		return
	}
	if d.open && (d.cont || bytes.HasPrefix(text, []byte("- "))) {
		d.pairs(sk, bytes.TrimPrefix(text, []byte("- ")))
		return
	}
	d.flush(sk)
	sk.stats.Ignored++
}

// pairs adds the "key:value" pairs of text, which follows "step:N" or
// continues a record. A key repeated within a record takes its last value
// and is counted in Stats.Duplicates (see the package documentation).
func (d *consoleDecoder) pairs(sk *sink, text []byte) {
	text = bytes.TrimRight(text, " ")
	text, d.cont = bytes.CutSuffix(text, []byte(" -"))
	if bytes.Equal(text, []byte("-")) {
		text, d.cont = nil, true
	}
	for p := range bytes.SplitSeq(text, consoleSep) {
		p = bytes.TrimSpace(p)
		if len(p) == 0 {
			continue
		}
		// Keys hold no colon; values written by repr may (device='cuda:0').
		key, val, ok := bytes.Cut(p, []byte{':'})
		key = bytes.TrimSpace(key)
		v, isNum := consoleValue(bytes.TrimSpace(val))
		if !ok || len(key) == 0 || !isNum {
			sk.stats.Skipped++
			continue
		}
		sk.add(key, v)
	}
}

// pending reports where an open record starts.
func (d *consoleDecoder) pending() (Cursor, bool) { return d.from, d.open }

// flush commits the open record, if any.
func (d *consoleDecoder) flush(sk *sink) {
	if d.open {
		sk.commit(d.step)
		d.open, d.cont = false, false
	}
}

// drop discards the open record so that the next read parses it again.
func (d *consoleDecoder) drop(sk *sink) {
	if d.open {
		sk.drop()
		d.open, d.cont = false, false
	}
}

// cutStep recognises "step:N" at the start of text, followed by the end of
// the line or a separator.
func cutStep(text []byte) (int64, []byte, bool) {
	rest, ok := bytes.CutPrefix(text, []byte("step:"))
	if !ok {
		return 0, nil, false
	}
	end := bytes.IndexByte(rest, ' ')
	if end < 0 {
		end = len(rest)
	}
	step, err := strconv.ParseInt(string(rest[:end]), 10, 64)
	if err != nil {
		return 0, nil, false
	}
	rest = rest[end:]
	if len(bytes.TrimSpace(rest)) > 0 && !bytes.HasPrefix(rest, []byte(" -")) {
		return 0, nil, false
	}
	return step, rest, true
}

// consoleValue reads a value as Python printed it: 0.25, 1e-06, nan, inf,
// -inf, or a NumPy/PyTorch repr such as np.float64(0.25), np.int64(5) or
// tensor(0.25, device='cuda:0'). Bools (True, np.True_) are not numbers.
func consoleValue(v []byte) (float64, bool) {
	if open := bytes.IndexByte(v, '('); open > 0 && v[len(v)-1] == ')' && isDottedName(v[:open]) {
		v = v[open+1 : len(v)-1]
		if comma := bytes.IndexByte(v, ','); comma >= 0 {
			v = v[:comma]
		}
		v = bytes.TrimSpace(v)
	}
	f, err := strconv.ParseFloat(string(v), 64)
	if err != nil {
		return 0, false
	}
	return f, true
}

// isDottedName reports whether b looks like a Python name such as
// np.float64 or torch.tensor.
func isDottedName(b []byte) bool {
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_', c == '.':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// stripANSI appends b to dst without terminal escape sequences (colours
// that Ray and rich add): CSI sequences ESC [ … final byte, and two-byte
// escapes.
func stripANSI(dst, b []byte) []byte {
	if bytes.IndexByte(b, 0x1b) < 0 {
		return append(dst, b...)
	}
	for i := 0; i < len(b); i++ {
		if b[i] != 0x1b {
			dst = append(dst, b[i])
			continue
		}
		if i+1 < len(b) && b[i+1] == '[' {
			i += 2
			for i < len(b) && (b[i] < 0x40 || b[i] > 0x7e) {
				i++
			}
			continue
		}
		i++ // a two-byte escape
	}
	return dst
}

// trimRayDecoration removes what Ray adds around a worker's line: the
// "(TaskRunner pid=12345)" or "(pid=1, ip=10.0.0.1)" prefix and the
// " [repeated 3x across cluster]" suffix of its log deduplication.
func trimRayDecoration(b []byte) []byte {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '(' {
		if end := bytes.IndexByte(b, ')'); end > 0 && bytes.Contains(b[:end], []byte("pid=")) {
			b = bytes.TrimSpace(b[end+1:])
		}
	}
	if bytes.HasSuffix(b, []byte(" across cluster]")) {
		if i := bytes.LastIndex(b, []byte(" [repeated ")); i >= 0 {
			b = bytes.TrimSpace(b[:i])
		}
	}
	return b
}
