package grade

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReadPredictions(t *testing.T) {
	tests := []struct {
		name      string
		format    string
		in        string
		goldCount int
		want      []Prediction
		warnings  []string // Where of each warning
		errLike   string   // substring of the error; "" when none
	}{
		{
			name:   "bird json",
			format: FormatBirdJSON,
			in:     `{"0": "SELECT 1\t----- bird -----\tfinancial", "1": "SELECT\n2\t----- bird -----\ttoxicology"}`,
			want:   []Prediction{{0, "SELECT 1", "financial"}, {1, "SELECT\n2", "toxicology"}},
		},
		{
			name:     "bird json without separator",
			format:   FormatBirdJSON,
			in:       `{"0": "  SELECT 1  "}`,
			want:     []Prediction{{0, "SELECT 1", "financial"}},
			warnings: []string{`key "0"`},
		},
		{
			name:     "bird json with two separators",
			format:   FormatBirdJSON,
			in:       `{"0": "SELECT 1\t----- bird -----\ta\t----- bird -----\tb"}`,
			want:     []Prediction{{0, "SELECT 1\t----- bird -----\ta\t----- bird -----\tb", "financial"}},
			warnings: []string{`key "0"`},
		},
		{
			name:     "bird json value not a string",
			format:   FormatBirdJSON,
			in:       `{"0": null, "1": 5}`,
			want:     []Prediction{{0, " ", "financial"}, {1, " ", "financial"}},
			warnings: []string{`key "0"`, `key "1"`},
		},
		{
			name:     "bird json paired by position, not by key",
			format:   FormatBirdJSON,
			in:       `{"1": "B\t----- bird -----\tx", "0": "A\t----- bird -----\tx"}`,
			want:     []Prediction{{0, "B", "x"}, {1, "A", "x"}},
			warnings: []string{`key "1"`, `key "0"`},
		},
		{
			name:     "bird json duplicate key keeps its first place",
			format:   FormatBirdJSON,
			in:       `{"0": "A\t----- bird -----\tx", "1": "B\t----- bird -----\tx", "0": "C\t----- bird -----\tx"}`,
			want:     []Prediction{{0, "C", "x"}, {1, "B", "x"}},
			warnings: []string{`key "0"`},
		},
		{name: "bird json not an object", format: FormatBirdJSON, in: `["SELECT 1"]`, errLike: "want a JSON object"},
		{name: "bird json truncated", format: FormatBirdJSON, in: `{"0": "SELECT 1", "1": `, errLike: `key "1"`},
		{name: "bird json count", format: FormatBirdJSON, in: `{"0": "A\t----- bird -----\tx"}`, goldCount: 2, errLike: "1 predictions for 2 gold"},
		{
			name:   "spider txt",
			format: FormatSpiderTxt,
			in:     "SELECT 1\r\n  SELECT 2\tignored\nSELECT 3",
			want:   []Prediction{{0, "SELECT 1", ""}, {1, "SELECT 2", ""}, {2, "SELECT 3", ""}},
		},
		{name: "spider txt blank line", format: FormatSpiderTxt, in: "SELECT 1\n\nSELECT 2\n", errLike: "line 2 is blank"},
		{name: "spider txt count", format: FormatSpiderTxt, in: "SELECT 1\n", goldCount: 2, errLike: "1 predictions for 2 gold"},
		{
			name:   "jsonl in any order",
			format: FormatJSONL,
			in:     "{\"index\": 1, \"sql\": \"SELECT 2\"}\n\n{\"index\": 0, \"sql\": \"SELECT 1\", \"db_id\": \"x\"}\n",
			want:   []Prediction{{0, "SELECT 1", "x"}, {1, "SELECT 2", ""}},
		},
		{name: "jsonl bad json", format: FormatJSONL, in: "{\"index\": 0, \"sql\": \"SELECT 1\"}\n{index: 1}\n", errLike: "line 2"},
		{name: "jsonl unknown field", format: FormatJSONL, in: `{"index": 0, "query": "SELECT 1"}`, errLike: "line 1"},
		{name: "jsonl missing sql", format: FormatJSONL, in: `{"index": 0}`, errLike: `line 1: want "index" and "sql"`},
		{name: "jsonl duplicate index", format: FormatJSONL, in: "{\"index\": 0, \"sql\": \"a\"}\n{\"index\": 0, \"sql\": \"b\"}", errLike: "line 2: index 0 already on line 1"},
		{name: "jsonl gap", format: FormatJSONL, in: "{\"index\": 0, \"sql\": \"a\"}\n{\"index\": 2, \"sql\": \"b\"}", errLike: "line 2: index 2 outside"},
		{name: "unknown format", format: "csv", in: "", errLike: "unknown predictions format"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, warns, err := ReadPredictions(strings.NewReader(tt.in), tt.format, tt.goldCount)
			if tt.errLike != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errLike) {
					t.Fatalf("err = %v, want one containing %q", err, tt.errLike)
				}
				if !errors.Is(err, ErrPredictions) && !errors.Is(err, ErrUnknownFormat) {
					t.Errorf("err = %v does not match a sentinel", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("predictions (-want +got):\n%s", diff)
			}
			var where []string
			for _, w := range warns {
				key, _, _ := strings.Cut(w.Where, " (line ") // the line is checked in TestBirdJSONWarningsNameTheLine
				where = append(where, key)
			}
			if diff := cmp.Diff(tt.warnings, where); diff != "" {
				t.Errorf("warnings %+v; places (-want +got):\n%s", warns, diff)
			}
		})
	}
}

func TestBirdJSONWarningsNameTheLine(t *testing.T) {
	in := "{\n  \"0\": \"SELECT 1\\t----- bird -----\\tsuperhero\",\n  \"1\": 42\n}\n"
	_, warns, err := ReadBirdJSON(strings.NewReader(in))
	if err != nil || len(warns) != 1 || warns[0].Where != `key "1" (line 3)` {
		t.Errorf("warnings %+v, %v", warns, err)
	}
}
