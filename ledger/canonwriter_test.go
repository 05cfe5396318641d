package ledger

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// writeAny writes v, a tree of the types encoding/json decodes into (with
// int64 and float64 for numbers), through w: objects in the order their
// names sort, as a caller of the writer must write them.
func writeAny(w *CanonicalWriter, v any) {
	switch x := v.(type) {
	case nil:
		w.Null()
	case bool:
		w.Bool(x)
	case string:
		w.String(x)
	case int64:
		w.Int(x)
	case float64:
		w.Float(x)
	case []any:
		w.Array()
		for _, e := range x {
			writeAny(w, e)
		}
		w.End()
	case map[string]any:
		names := make([]string, 0, len(x))
		for k := range x {
			names = append(names, k)
		}
		sortUTF16(names)
		w.Object()
		for _, k := range names {
			w.Name(k)
			writeAny(w, x[k])
		}
		w.End()
	default:
		panic("writeAny: unexpected type")
	}
}

func sortUTF16(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && compareUTF16(s[j-1], s[j]) > 0; j-- {
			s[j-1], s[j] = s[j], s[j-1]
		}
	}
}

// checkWriterAgrees writes v through a CanonicalWriter and through
// CanonicalJSON and fails unless both give the same bytes, or both refuse.
func checkWriterAgrees(t *testing.T, v any) {
	t.Helper()
	w := &CanonicalWriter{}
	w.Reserve(16)
	writeAny(w, v)
	got, gotErr := w.Bytes()
	want, wantErr := CanonicalJSON(v)
	if (gotErr != nil) != (wantErr != nil) {
		t.Fatalf("%#v: writer error %v, CanonicalJSON error %v", v, gotErr, wantErr)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%#v (-CanonicalJSON +writer):\n%s", v, diff)
	}
}

func TestCanonicalWriterAgreesWithCanonicalJSON(t *testing.T) {
	for _, v := range []any{
		nil, true, false, "", int64(0), 0.0, math.Copysign(0, -1),
		"plain", "quote \" backslash \\ tab \t nl \n cr \r bs \b ff \f nul \x00 us \x1f del \x7f",
		"<html> & \u2028 \u2029 é 😀", "bad utf-8 \xff\xfe end", "\xed\xa0\x80 a surrogate's bytes",
		int64(1) << 53, -int64(1) << 53, int64(1)<<53 + 1, int64(1) << 60, int64(math.MaxInt64), int64(math.MinInt64),
		0.1, 1e21, 1e20, 1e-6, 1e-7, 5e-324, math.MaxFloat64, -1.5, 123456789.125, 1 / 3.0,
		[]any{}, []any{int64(1), "a", nil, []any{map[string]any{}}},
		map[string]any{"b": int64(1), "a": "x", "aa": []any{true}, "": false},
		// UTF-16 order differs from byte order above U+FFFF.
		map[string]any{"\uffff": int64(1), "😀": int64(2), "\u00e9": int64(3), "z": int64(4)},
		map[string]any{"items": []any{map[string]any{"task_id": "t1", "correct": true, "reward": 0.25, "sample": int64(0)}}},
	} {
		checkWriterAgrees(t, v)
	}
}

func TestCanonicalWriterRefusesMistakes(t *testing.T) {
	for _, tt := range []struct {
		name  string
		write func(w *CanonicalWriter)
		want  string
	}{
		{"names out of order", func(w *CanonicalWriter) {
			w.Object()
			w.Name("b")
			w.Int(1)
			w.Name("a")
			w.Int(2)
			w.End()
		}, "UTF-16 order"},
		{"a name twice", func(w *CanonicalWriter) {
			w.Object()
			w.Name("a")
			w.Int(1)
			w.Name("a")
			w.Int(2)
			w.End()
		}, "unique"},
		{"byte order, not UTF-16 order", func(w *CanonicalWriter) {
			w.Object()
			w.Name("\uffff")
			w.Int(1)
			w.Name("😀")
			w.Int(2)
			w.End()
		}, "UTF-16 order"},
		{"a member without a name", func(w *CanonicalWriter) { w.Object(); w.Int(1); w.End() }, "without a name"},
		{"a name without a value", func(w *CanonicalWriter) { w.Object(); w.Name("a"); w.End() }, "without its value"},
		{"two names", func(w *CanonicalWriter) { w.Object(); w.Name("a"); w.Name("b"); w.Int(1); w.End() }, "without its value"},
		{"a name in an array", func(w *CanonicalWriter) { w.Array(); w.Name("a"); w.Int(1); w.End() }, "outside an object"},
		{"End with nothing open", func(w *CanonicalWriter) { w.Int(1); w.End() }, "no container open"},
		{"unclosed", func(w *CanonicalWriter) { w.Array(); w.Int(1) }, "incomplete"},
		{"nothing", func(w *CanonicalWriter) {}, "incomplete"},
		{"two values", func(w *CanonicalWriter) { w.Int(1); w.Int(2) }, "complete top-level value"},
		{"NaN", func(w *CanonicalWriter) { w.Float(math.NaN()) }, "not a finite"},
		{"infinity", func(w *CanonicalWriter) { w.Array(); w.Float(math.Inf(-1)); w.End() }, "not a finite"},
		{"2^53 + 1", func(w *CanonicalWriter) { w.Int(1<<53 + 1) }, "not exactly representable"},
		{"MaxInt64", func(w *CanonicalWriter) { w.Int(math.MaxInt64) }, "not exactly representable"},
		{"2^60, a float64 but spelt 1152921504606847000", func(w *CanonicalWriter) { w.Int(1 << 60) }, "not exactly representable"},
		{"the first mistake is kept", func(w *CanonicalWriter) { w.Float(math.NaN()); w.Int(1<<53 + 1) }, "not a finite"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := &CanonicalWriter{}
			tt.write(w)
			b, err := w.Bytes()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %q, error %v; want an error saying %q", b, err, tt.want)
			}
		})
	}
}

// FuzzCanonicalWriter checks the writer against CanonicalJSON on objects
// made of fuzzed names, strings and numbers.
func FuzzCanonicalWriter(f *testing.F) {
	f.Add("a", "b", "x\ny", int64(3), 0.5)
	f.Add("\uffff", "😀", "\xff", int64(1)<<53+1, 1e21)
	f.Add("", "a", "\u2028<>&", int64(math.MinInt64), 5e-324)
	f.Fuzz(func(t *testing.T, n1, n2, s string, i int64, x float64) {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			x = 0 // encoding/json refuses these too; TestCanonicalWriterRefusesMistakes covers the writer
		}
		// A name that is not UTF-8 sorts in the writer by its raw bytes'
		// decoding, and in CanonicalJSON after encoding/json has replaced
		// the bad bytes: two names may then collide, which the maps below
		// cannot show. Valid names only.
		if !validUTF8(n1) || !validUTF8(n2) || n1 == n2 {
			return
		}
		checkWriterAgrees(t, map[string]any{n1: s, n2: []any{i, x, s}})
	})
}

func validUTF8(s string) bool { return strings.ToValidUTF8(s, "\ufffd") == s }
