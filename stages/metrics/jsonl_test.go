package metrics

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
)

// parseText writes text to a file and parses it whole in format f.
func parseText(t *testing.T, f Format, text string) ([]Point, Stats, error) {
	t.Helper()
	path := t.TempDir() + "/metrics.log"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return ParseFile(path, Options{Format: f})
}

func TestVerlJSONL(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []Point
		skip int64
		dup  int64
	}{
		{
			name: "flat",
			text: `{"step": 1, "data": {"critic/score/mean": 0.5, "actor/lr": 1e-06}}` + "\n",
			want: []Point{{1, "critic/score/mean", 0.5}, {1, "actor/lr", 1e-06}},
		},
		{
			name: "step after data",
			text: `{"data": {"a": 1}, "step": 9}` + "\n",
			want: []Point{{9, "a", 1}},
		},
		{
			name: "nested flattened with slash",
			text: `{"step": 2, "data": {"actor": {"lr": 0.1, "kl": {"mean": 0.2}}, "x": 3}}` + "\n",
			want: []Point{{2, "actor/lr", 0.1}, {2, "actor/kl/mean", 0.2}, {2, "x", 3}},
		},
		{
			name: "non-numeric values skipped",
			text: `{"step": 3, "data": {"flag": true, "name": "run-1", "none": null, "hist": [1, 2], "v": -2.5e-3}}` + "\n",
			want: []Point{{3, "v", -2.5e-3}},
			skip: 4,
		},
		{
			name: "python non-finite literals",
			text: `{"step": 4, "data": {"loss": NaN, "up": Infinity, "down": -Infinity}}` + "\n",
			want: []Point{{4, "loss", math.NaN()}, {4, "up", math.Inf(1)}, {4, "down", math.Inf(-1)}},
		},
		{
			name: "escaped keys",
			text: `{"step": 5, "data": {"a\"b": 1, "caf\u00e9\/x": 2, "\ud83d\ude00": 3, "tab\there": 4}}` + "\n",
			want: []Point{{5, `a"b`, 1}, {5, "café/x", 2}, {5, "😀", 3}, {5, "tab\there", 4}},
		},
		{
			name: "duplicate key: the last write wins",
			text: `{"step": 6, "data": {"a": 1, "a": 2}}` + "\n",
			want: []Point{{6, "a", 2}},
			dup:  1,
		},
		{
			name: "integral float step, blank lines, CRLF, other members",
			text: "\n" + `{"step": 7.0, "data": {"a": 1}, "ts": "x"}` + "\r\n\n",
			want: []Point{{7, "a", 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pts, st, err := parseText(t, FormatVerl, tt.text)
			if err != nil {
				t.Fatal(err)
			}
			if !pointsEqual(pts, tt.want) {
				t.Errorf("points = %v, want %v", pts, tt.want)
			}
			if st.Skipped != tt.skip || st.Duplicates != tt.dup {
				t.Errorf("skipped, duplicates = %d, %d; want %d, %d", st.Skipped, st.Duplicates, tt.skip, tt.dup)
			}
		})
	}
}

func TestJSONLErrors(t *testing.T) {
	good := `{"step": 1, "data": {"a": 1}}` + "\n"
	tests := []struct {
		name   string
		format Format
		text   string
		line   int64
		column int64
		is     error
		msg    string
	}{
		{"no step", FormatVerl, good + `{"data": {"a": 1}}` + "\n", 2, 0, ErrNoStep, ""},
		{"fractional step", FormatVerl, good + good + `{"step": 1.5, "data": {}}` + "\n", 3, 10, nil, "not an integer"},
		{"bad value", FormatVerl, good + `{"step": 2, "data": {"a": 01}}` + "\n", 2, 28, nil, "after object value"},
		{"trailing garbage", FormatVerl, `{"step": 2, "data": {}} x` + "\n", 1, 25, nil, "after top-level value"},
		{"truncated line", FormatVerl, `{"step": 2, "data": {"a": 1` + "\n", 1, 28, errJSONEnd, ""},
		{"not an object", FormatJSONL, good + "[1, 2]\n", 2, 1, nil, "beginning of object"},
		{"bad escape", FormatJSONL, `{"step": 1, "a\q": 1}` + "\n", 1, 15, nil, "invalid escape"},
		{"too deep", FormatJSONL, `{"step": 1, "a": ` + strings.Repeat("[", 300) + "\n", 1, 0, nil, "nesting deeper"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pts, _, err := parseText(t, tt.format, tt.text)
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want a *ParseError", err)
			}
			if pe.Line != tt.line || tt.column != 0 && pe.Column != tt.column {
				t.Errorf("error at %d:%d, want %d:%d (%v)", pe.Line, pe.Column, tt.line, tt.column, err)
			}
			if tt.is != nil && !errors.Is(err, tt.is) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("err = %v, want %v / %q", err, tt.is, tt.msg)
			}
			if !strings.Contains(err.Error(), "metrics.log:") {
				t.Errorf("err = %v, does not name the file", err)
			}
			if int64(len(pts)) != tt.line-1 {
				t.Errorf("got %d points before the fault, want %d", len(pts), tt.line-1)
			}
		})
	}
}

func TestGenericJSONL(t *testing.T) {
	text := `{"iter": 1, "loss": 0.5, "eval": {"acc": 0.25}, "tag": "x"}` + "\n" + `{"loss": 0.4, "iter": 2}` + "\n"
	path := t.TempDir() + "/m.jsonl"
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	pts, st, err := ParseFile(path, Options{Format: FormatJSONL, StepKey: "iter"})
	if err != nil {
		t.Fatal(err)
	}
	want := []Point{{1, "loss", 0.5}, {1, "eval/acc", 0.25}, {2, "loss", 0.4}}
	if !slices.Equal(pts, want) || st.Skipped != 1 {
		t.Errorf("points = %v, skipped %d; want %v, 1", pts, st.Skipped, want)
	}
}

// FuzzJSONLeaves checks the scanner against encoding/json: on any object
// encoding/json accepts, the numeric leaves must agree in order and value,
// with keys decoded the same way.
func FuzzJSONLeaves(f *testing.F) {
	f.Add(`{"step": 1, "a": 1.5, "b": {"c": -2e3, "d": "x"}, "e": [1, {"f": 2}], "g\u00e9\n": 0}`)
	f.Add(`{"a\ud800": 1, "\ud83d\ude00": 2, "x\"y": true}`)
	f.Fuzz(func(t *testing.T, doc string) {
		var s jsonScanner
		var sk sink
		sk.begin()
		s.reset([]byte(doc))
		err := s.leaves(&sk, nil, 0)
		if err == nil {
			err = s.expectEnd()
		}
		var v any
		dec := json.NewDecoder(strings.NewReader(doc))
		dec.UseNumber()
		jerr := dec.Decode(&v)
		obj, isObj := v.(map[string]any)
		if !json.Valid([]byte(doc)) || jerr != nil || !isObj || repeatsKey(doc) || sk.stats.Duplicates > 0 {
			// Not JSON (the scanner also takes NaN), or a repeated or
			// colliding key, which the two resolve differently.
			return
		}
		if err != nil {
			t.Fatalf("scanner rejected %q: %v", doc, err)
		}
		want := map[string]float64{}
		flattenJSON(obj, "", want)
		got := map[string]float64{}
		for _, p := range sk.out {
			got[p.Key] = p.Value
		}
		if len(got) != len(want) {
			t.Fatalf("%q: scanner leaves %v, encoding/json %v", doc, got, want)
		}
		for k, w := range want {
			if g, ok := got[k]; !ok || g != w {
				t.Fatalf("%q: key %q = %v (present %v), encoding/json %v", doc, k, g, ok, w)
			}
		}
	})
}

// flattenJSON collects numeric leaves the way jsonScanner.leaves names them.
func flattenJSON(obj map[string]any, prefix string, out map[string]float64) {
	for k, v := range obj {
		if prefix != "" {
			k = prefix + "/" + k
		}
		switch v := v.(type) {
		case map[string]any:
			flattenJSON(v, k, out)
		case json.Number:
			f, err := v.Float64()
			if err != nil && !math.IsInf(f, 0) {
				continue
			}
			if _, dup := out[k]; !dup {
				out[k] = f
			}
		}
	}
}

// repeatsKey reports whether an object in doc repeats a key. Both keep the
// last value of a repeated leaf, but encoding/json replaces a repeated
// object whole where the scanner merges its leaves.
func repeatsKey(doc string) bool {
	type frame struct {
		obj, wantKey bool
		keys         map[string]bool
	}
	var stack []*frame
	dec := json.NewDecoder(strings.NewReader(doc))
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if n := len(stack); n > 0 && stack[n-1].wantKey {
			if k, ok := tok.(string); ok {
				if stack[n-1].keys[k] {
					return true
				}
				stack[n-1].keys[k] = true
				stack[n-1].wantKey = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{obj: true, wantKey: true, keys: map[string]bool{}})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if n := len(stack); n > 0 && stack[n-1].obj {
			stack[n-1].wantKey = true // a member's value ended
		}
	}
}
