package metrics

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// appendFile appends b to the file at path.
func appendFile(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestTailerGrowingFile writes each format in random pieces, reads after
// every piece, and now and then "crashes": a new Tailer resumes from the
// last cursor, dropping whatever the old one had not yet returned. The
// points collected must equal a whole-file parse, none lost or repeated.
func TestTailerGrowingFile(t *testing.T) {
	var verl, console strings.Builder
	var events [][]byte
	for step := range 40 {
		fmt.Fprintf(&verl, `{"step": %d, "data": {"a": %d.5, "b\"c": %d}}`+"\n", step, step, -step)
		fmt.Fprintf(&console, "(TaskRunner pid=7) step:%d - a:np.float64(%d.5) -\n - b:%d\nsome chatter\n", step, step, step)
		events = append(events, eventBytes(int64(step), tbValue{tag: "a", simple: float32(step)}))
	}
	var tb []byte
	for _, ev := range events {
		tb = appendRecord(tb, ev)
	}
	tests := []struct {
		name   string
		format Format
		file   string
		data   []byte
	}{
		{"verl", FormatVerl, "log.jsonl", []byte(verl.String())},
		{"verl-console", FormatVerlConsole, "out.log", []byte(console.String())},
		{"tensorboard", FormatTensorBoard, "events.out.tfevents.1", tb},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(len(tt.name))))
			path := t.TempDir() + "/" + tt.file
			appendFile(t, path, nil)
			want, _, err := ParseFile(writeTemp(t, tt.file, tt.data), Options{Format: tt.format})
			if err != nil {
				t.Fatal(err)
			}
			tl, err := NewTailer(path, Options{Format: tt.format}, Cursor{})
			if err != nil {
				t.Fatal(err)
			}
			var got []Point
			for rest := tt.data; len(rest) > 0; {
				n := min(len(rest), 1+rng.IntN(97))
				appendFile(t, path, rest[:n])
				rest = rest[n:]
				pts, err := tl.Next()
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, pts...)
				if rng.IntN(5) == 0 {
					if tl, err = NewTailer(path, Options{Format: tt.format}, tl.Cursor()); err != nil {
						t.Fatal(err)
					}
				}
			}
			pts, err := tl.Final()
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, pts...)
			if !pointsEqual(got, want) {
				t.Errorf("tailed %d points, want %d:\n got %v\nwant %v", len(got), len(want), got, want)
			}
			if tl.Stats().PendingBytes != 0 {
				t.Errorf("pending after Final = %d", tl.Stats().PendingBytes)
			}
		})
	}
}

// writeTemp writes data to a fresh file named name.
func writeTemp(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := t.TempDir() + "/" + name
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTailerHoldsBackPartialLine(t *testing.T) {
	path := writeTemp(t, "log.jsonl", []byte(`{"step": 1, "data": {"a": 1}}`+"\n"+`{"step": 2, "da`))
	tl, err := NewTailer(path, Options{Format: FormatVerl}, Cursor{})
	if err != nil {
		t.Fatal(err)
	}
	pts, err := tl.Next()
	if err != nil || len(pts) != 1 {
		t.Fatalf("Next = %v, %v; want step 1 only", pts, err)
	}
	if c, st := tl.Cursor(), tl.Stats(); c.Offset != 30 || c.Line != 1 || c.Records != 1 || st.PendingBytes != 15 {
		t.Errorf("cursor %+v, pending %d; want offset 30, line 1, 1 record, 15 pending", c, st.PendingBytes)
	}
	// The writer died mid-line: Final parses the fragment and reports it.
	var pe *ParseError
	if _, err := tl.Final(); !errors.As(err, &pe) || pe.Line != 2 {
		t.Errorf("Final = %v, want a parse error on line 2", err)
	}
}

func TestTailerErrors(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/log.jsonl"
	if _, err := NewTailer(path, Options{}, Cursor{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("detecting a missing file = %v, want fs.ErrNotExist", err)
	}
	tl, err := NewTailer(path, Options{Format: FormatVerl}, Cursor{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tl.Next(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("reading a missing file = %v, want fs.ErrNotExist", err)
	}
	if _, err := NewTailer(path, Options{Format: "csv"}, Cursor{}); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("format csv = %v, want ErrUnknownFormat", err)
	}
	short, err := NewTailer(writeTemp(t, "short", nil), Options{Format: FormatVerl}, Cursor{Offset: 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := short.Next(); !errors.Is(err, ErrRewound) {
		t.Errorf("cursor past the end = %v, want ErrRewound", err)
	}
}

func TestTailerLongLine(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"step": 1, "data": {`)
	for i := range 200000 {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `"k%d": %d`, i, i)
	}
	b.WriteString("}}\n")
	pts, _, err := ParseFile(writeTemp(t, "wide.jsonl", []byte(b.String())), Options{Format: FormatVerl})
	if err != nil || len(pts) != 200000 {
		t.Fatalf("a %d-byte line gave %d points, %v", b.Len(), len(pts), err)
	}
}

func TestTailerConsoleCarriageReturnLine(t *testing.T) {
	path := writeTemp(t, "out.log", []byte("step:1 - a:1\rstep:2 - a:2\n"))
	tl, err := NewTailer(path, Options{Format: FormatVerlConsole}, Cursor{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := tl.Next()
	if err != nil {
		t.Fatal(err)
	}
	appendFile(t, path, []byte("step:3 - a:3\n"))
	second, err := tl.Final()
	if err != nil {
		t.Fatal(err)
	}
	if got := append(first, second...); !pointsEqual(got, []Point{{1, "a", 1}, {2, "a", 2}, {3, "a", 3}}) {
		t.Errorf("points = %v, want steps 1, 2, 3 once each", got)
	}
}
