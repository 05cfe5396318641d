package reports

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/untrusted"
)

// JSON renders the report as indented JSON, the evidence bundle: every
// number with the entries behind it, and what --check needs to make the
// report again.
func (r *Report) JSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, fmt.Errorf("render json: %w", err)
	}
	return b.Bytes(), nil
}

// Render returns the report's files, by name, in the formats it was asked
// for.
func (r *Report) Render() (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, f := range r.Request.Formats {
		var b []byte
		var err error
		switch f {
		case FormatMarkdown:
			b, err = r.Markdown()
		case FormatHTML:
			b, err = r.HTML()
		case FormatJSON:
			b, err = r.JSON()
		default:
			err = fmt.Errorf("report format %q: want md, html or json", f)
		}
		if err != nil {
			return nil, err
		}
		out[Files[f]] = b
	}
	return out, nil
}

// Write builds the report from l (Build) and writes its files into dir,
// creating it; report.json is always among them. It is the library entry
// point rlgate report and rlgate publish share.
func Write(ctx context.Context, l *ledger.Ledger, o Options, dir string) (*Report, error) {
	for _, f := range o.Formats {
		if _, ok := Files[f]; !ok {
			return nil, fmt.Errorf("report format %q: want md, html or json", f)
		}
	}
	r, err := Build(ctx, l, o)
	if err != nil {
		return nil, err
	}
	files, err := r.Render()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("write report: %w", err)
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := writeFile(filepath.Join(dir, name), files[name]); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// writeFile writes b to path through a temporary file and a rename, so a
// reader never sees half a report.
func writeFile(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("write report %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write report %s: %w", path, err)
	}
	return nil
}

// Difference is one place where a written report and the ledger disagree.
// Line is 1-based, 0 for a whole file.
type Difference struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Report string `json:"report"`
	Ledger string `json:"ledger"`
}

func (d Difference) String() string {
	at := d.File
	if d.Line > 0 {
		at = fmt.Sprintf("%s:%d", d.File, d.Line)
	}
	return fmt.Sprintf("%s: report %s, ledger %s", at, d.Report, d.Ledger)
}

// CheckResult is what Check found.
type CheckResult struct {
	Dir         string       `json:"dir"`
	Head        ledger.Head  `json:"head"`
	Files       []string     `json:"files"`
	OK          bool         `json:"ok"`
	Differences []Difference `json:"differences"`
}

// Check re-derives a written report from the ledger alone, as it was at
// the head the report records, and lists every difference: each line of
// each file that differs (the differing values when the line has the same
// shape), every file missing or not part of the report. report.json says
// which runs, policy and formats the report covered; an error means the
// check could not be made.
func Check(ctx context.Context, l *ledger.Ledger, dir string) (*CheckResult, error) {
	raw, err := untrusted.ReadFileIn(dir, Files[FormatJSON], untrusted.ReportLimit)
	if err != nil {
		return nil, &ledger.Error{Op: "check report", Path: dir, Err: err, Hint: "give the directory rlgate report --out wrote; --check reads its report.json"}
	}
	var rec struct {
		Format  string      `json:"format"`
		Head    ledger.Head `json:"head"`
		Request Options     `json:"request"`
	}
	if err := json.Unmarshal(raw, &rec); err != nil {
		return nil, fmt.Errorf("check report: %s: %w", filepath.Join(dir, Files[FormatJSON]), err)
	}
	if rec.Format != FormatVersion {
		return nil, fmt.Errorf("check report: %s: format %q, want %q", filepath.Join(dir, Files[FormatJSON]), rec.Format, FormatVersion)
	}
	res := &CheckResult{Dir: dir, Head: rec.Head, Differences: []Difference{}}
	o := rec.Request
	o.Head = &rec.Head
	r, err := Build(ctx, l, o)
	var le *ledger.Error
	if errors.As(err, &le) && strings.HasPrefix(le.Op, "report as of head") {
		now, herr := l.Head(ctx)
		if herr != nil {
			return nil, herr
		}
		res.Differences = append(res.Differences, Difference{File: Files[FormatJSON], Line: lineOf(raw, `"head"`),
			Report: "head " + rec.Head.String(), Ledger: "no such head (the ledger's is " + now.String() + ")"})
		return res, nil
	}
	if err != nil {
		return nil, err
	}
	want, err := r.Render()
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("check report: %w", err)
	}
	for _, e := range entries {
		have[e.Name()] = true
		if _, ok := want[e.Name()]; !ok {
			res.Differences = append(res.Differences, Difference{File: e.Name(), Report: "has this file", Ledger: "gives no such file"})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		res.Files = append(res.Files, name)
		if !have[name] {
			res.Differences = append(res.Differences, Difference{File: name, Report: "lacks this file", Ledger: "gives it"})
			continue
		}
		got, err := untrusted.ReadFileIn(dir, name, untrusted.ReportLimit)
		if err != nil {
			return nil, fmt.Errorf("check report: %w", err)
		}
		res.Differences = append(res.Differences, diffLines(name, got, want[name])...)
	}
	res.OK = len(res.Differences) == 0
	return res, nil
}

// diffLines compares a written file with the one the ledger gives. Bytes
// decide: any line that differs in any byte is a difference. Tokens only
// describe it: a line of the same shape is reported by its differing
// values, and a line whose values agree while its bytes do not (an edited
// '>' or quote, markup turned into text) is reported whole.
func diffLines(name string, got, want []byte) []Difference {
	if bytes.Equal(got, want) {
		return nil
	}
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	var out []Difference
	for i := range max(len(g), len(w)) {
		switch {
		case i >= len(g):
			out = append(out, Difference{File: name, Line: i + 1, Report: "(no line)", Ledger: quote(w[i])})
		case i >= len(w):
			out = append(out, Difference{File: name, Line: i + 1, Report: quote(g[i]), Ledger: "(no line)"})
		case g[i] != w[i]:
			out = append(out, lineDifferences(name, i+1, g[i], w[i])...)
		}
	}
	return out
}

// lineDifferences describes one line that differs: by its differing
// values when both have the same values in the same places and some
// differ, else whole.
func lineDifferences(name string, line int, g, w string) []Difference {
	gt, wt := tokens(g), tokens(w)
	var out []Difference
	if len(gt) == len(wt) {
		for j := range gt {
			if gt[j] != wt[j] {
				out = append(out, Difference{File: name, Line: line, Report: gt[j], Ledger: wt[j]})
			}
		}
	}
	if len(out) == 0 {
		out = append(out, Difference{File: name, Line: line, Report: quote(g), Ledger: quote(w)})
	}
	return out
}

// tokens splits a line into the values it states.
func tokens(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool {
		return strings.ContainsRune(" \t|,[]()<>\"=;", r)
	})
}

// quote shows a line in a difference, cut when long.
func quote(s string) string {
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return fmt.Sprintf("%q", s)
}

// lineOf returns the 1-based line of the first occurrence of s in b, or 0.
func lineOf(b []byte, s string) int {
	i := bytes.Index(b, []byte(s))
	if i < 0 {
		return 0
	}
	return bytes.Count(b[:i], []byte("\n")) + 1
}
