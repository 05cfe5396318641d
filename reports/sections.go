package reports

import (
	"fmt"
	"strings"

	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/stats"
)

// The formats a report is written in, and their files.
const (
	FormatMarkdown = "md"
	FormatHTML     = "html"
	FormatJSON     = "json"
)

// Files maps each format to the file it is written to in a report's
// directory.
var Files = map[string]string{FormatMarkdown: "report.md", FormatHTML: "report.html", FormatJSON: "report.json"}

// section is one titled table of a report, rendered the same way, cell
// for cell, into Markdown and HTML, so the two cannot state different
// numbers.
type section struct {
	ID     string
	Title  string
	Intro  string
	Header []string
	Rows   [][]string
	Notes  []string
}

// The number formats of every report: fixed precision, so that a report
// edited by one digit differs from the one the ledger gives; exported so
// that rlgate ui shows a figure as the report does: Number a proportion or accuracy, Signed a
// difference, PValue a p-value, Interval and SignedInterval the intervals
// of each, Value a figure that may be undefined ("n/a").
func Number(f float64) string { return fmt.Sprintf("%.4f", f) }

// Signed formats a difference (see Number).
func Signed(f float64) string { return fmt.Sprintf("%+.4f", f) }

// PValue formats a p-value (see Number).
func PValue(f float64) string { return fmt.Sprintf("%.4g", f) }

// Interval formats an interval of proportions (see Number).
func Interval(i stats.Interval) string {
	return fmt.Sprintf("[%.4f, %.4f]", i.Lo, i.Hi)
}

// SignedInterval formats an interval of differences (see Number).
func SignedInterval(i stats.Interval) string { return fmt.Sprintf("[%+.4f, %+.4f]", i.Lo, i.Hi) }

// Value formats a figure that may be undefined (see Number).
func Value(v stats.Value) string {
	if f, ok := v.Get(); ok {
		return Number(f)
	}
	return "n/a"
}

// seqList prints entry seqs; long runs of them as a count and range.
func seqList(seqs []int64) string {
	if len(seqs) == 0 {
		return "–"
	}
	if len(seqs) > 6 {
		return fmt.Sprintf("%d entries, %d–%d", len(seqs), seqs[0], seqs[len(seqs)-1])
	}
	s := make([]string, len(seqs))
	for i, q := range seqs {
		s[i] = fmt.Sprint(q)
	}
	return strings.Join(s, ", ")
}

// diffHeader is how a difference to the baseline is headed: as Δ only
// when the gate passed; otherwise as a measured difference the report
// does not claim.
func (r *Report) diffHeader(of string) string {
	if r.Supported {
		return "Δ " + of
	}
	return "difference " + of + " (unsupported)"
}

// sections lays the report out as tables, in the order every format
// shows them. esc is applied to every string read from the ledger (run
// ids, labels, policy, check, stage and file names, audit findings): a
// ledger is input the reader did not write, and Markdown would render
// the HTML or links such a string holds, where html/template escapes it
// on its own.
func (r *Report) sections(esc func(string) string) []section {
	level := fmt.Sprintf("%g%%", 100*(1-r.Params.Alpha))
	var out []section

	v := "none: no gate verdict covers these runs"
	if r.Verdict != nil {
		res := "PASSED"
		if !r.Verdict.OK {
			res = fmt.Sprintf("FAILED (%d of %d checks)", r.Verdict.Failed, r.Verdict.Checks)
		}
		v = fmt.Sprintf("%s, entry %d, policy %s (%s), decided on head %s", res, r.Verdict.Seq, esc(r.Verdict.Policy), r.Verdict.PolicyDigest, r.Verdict.DecidedOn)
		if r.Verdict.ModelIdentity != nil {
			v += ", model " + r.Verdict.ModelIdentity.String()
		}
	}
	out = append(out, section{ID: "ledger", Title: "Ledger", Header: []string{"item", "value"}, Rows: [][]string{
		{"ledger head", r.Head.String()},
		{"gate verdict", v},
		{"statistics", fmt.Sprintf("alpha %g (%s intervals), %d bootstrap resamples, seed %d, MDE at power %g, baseline %s",
			r.Params.Alpha, level, r.Params.Resamples, r.Params.Seed, r.Params.Power, esc(r.Params.Baseline))},
	}})

	if len(r.Verdicts) > 0 {
		vs := section{ID: "verdicts", Title: "Gate verdicts for this model",
			Intro: "Every gate verdict recorded for the model this report's verdict lets through, failures first: " +
				"a pass under one policy does not hide a failure under another.",
			Header: []string{"entry", "result", "policy", "held", "differs from " + audit.PaperGradeName, "decided on entry"}}
		for _, w := range r.Verdicts {
			res := "PASSED"
			if !w.OK {
				res = fmt.Sprintf("FAILED (%d of %d checks)", w.Failed, w.Checks)
			}
			diff := "–"
			if len(w.Differences) > 0 {
				diff = strings.Join(w.Differences, "; ")
			}
			vs.Rows = append(vs.Rows, []string{fmt.Sprint(w.Seq), res, esc(w.Policy), esc(w.Held), esc(diff), fmt.Sprint(w.DecidedOn.Seq)})
		}
		out = append(out, vs)
	}

	claims := section{ID: "claims", Title: "Claims",
		Intro: "Each claim A > B pairs the two evaluations' greedy outcomes by task, as the gate decided it (its Holm p is adjusted across the claims); " +
			"it holds only when the whole gate passed: under a failed gate, a claim whose test passed would pass, the others are not supported." + groupNote(r.Claims, esc) + repeatNote(r.Claims, esc),
		Header: []string{"claim", "status", r.diffHeader("A − B"), level + " bootstrap CI", "b", "c", "exact p", "Holm p", "MDE", "entries"}}
	for _, c := range r.Claims {
		status := "supported"
		switch {
		case c.Supported:
		case c.OK && r.Verdict != nil:
			status = "would pass (the gate failed)"
		default:
			status = "not supported"
			if len(c.Problems) > 0 {
				status += ": " + esc(strings.Join(c.Problems, "; "))
			}
		}
		if !c.Tested {
			claims.Rows = append(claims.Rows, []string{esc(c.Claim), status, "–", "–", "–", "–", "–", "–", "–", seqList(c.Seqs)})
			continue
		}
		claims.Rows = append(claims.Rows, []string{esc(c.Claim), status, Signed(c.Delta), SignedInterval(c.CI), fmt.Sprint(c.B), fmt.Sprint(c.C),
			PValue(c.ExactP), PValue(c.HolmP), Value(c.MDE), seqList(c.Seqs)})
	}
	out = append(out, claims)

	groups := []struct{ group, title, col string }{{"all", "Models", ""}, {"difficulty", "Models by difficulty", "difficulty"}, {"database", "Models by database", "database"}}
	for _, g := range groups {
		s := section{ID: "models-" + g.group, Title: g.title}
		s.Header = []string{"model", "run", "tasks", "correct", "accuracy", level + " Wilson CI", r.diffHeader("vs " + esc(r.Params.Baseline)),
			level + " bootstrap CI", "b", "c", "McNemar p", "Holm p", "MDE"}
		if g.col != "" {
			s.Header = append([]string{g.col}, s.Header...)
		}
		for _, t := range r.Tables {
			if t.Group != g.group {
				continue
			}
			for _, m := range t.Rows {
				row := []string{esc(m.Label), esc(m.Run), fmt.Sprint(m.N), fmt.Sprint(m.Correct), Number(m.Accuracy), Interval(m.Wilson)}
				if p := m.Pair; p != nil {
					row = append(row, Signed(p.Delta), SignedInterval(p.Bootstrap.Percentile), fmt.Sprint(p.B), fmt.Sprint(p.C),
						PValue(p.McNemar.ExactP), PValue(p.HolmP), Value(p.MDE))
				} else {
					row = append(row, "baseline", "–", "–", "–", "–", "–", "–")
				}
				if g.col != "" {
					row = append([]string{esc(t.Value)}, row...)
				}
				s.Rows = append(s.Rows, row)
			}
			if g.group == "all" {
				s.Notes = append(s.Notes, "Outcomes entries: "+seqList(t.Seqs)+".")
			}
		}
		if len(s.Rows) == 0 {
			if g.group == "all" {
				continue
			}
			s.Intro = "The gradings recorded no " + g.col + " for these tasks."
			s.Header = nil
		}
		if g.group == "all" {
			s.Intro = "b counts tasks only the model solved, c tasks only the baseline solved; McNemar p is exact, Holm-adjusted across the models; MDE is the minimum detectable effect at the stated power."
		}
		out = append(out, s)
	}

	audits := section{ID: "audits", Title: "Audits", Header: []string{"check", "result", "finding", "entries"}}
	for _, a := range r.Audits {
		res := "pass"
		if !a.OK {
			res = "FAIL"
		}
		audits.Rows = append(audits.Rows, []string{esc(strings.TrimPrefix(a.Name, "audit ")), res, esc(a.Message), seqList(a.Seqs)})
	}
	if len(audits.Rows) == 0 {
		audits.Intro, audits.Header = "No gate verdict, so no audit was recorded for these runs.", nil
	}
	out = append(out, audits)

	budget := section{ID: "budget", Title: "Budget",
		Header: []string{"model", "rollout", "protocol", "task set", "tasks", "samples", "temperature", "max turns", "max tokens/turn", "SQL budget",
			"status", "episodes", "unfinished", "tokens in", "tokens out", "entries"}}
	for _, b := range r.Budget {
		budget.Rows = append(budget.Rows, []string{esc(b.Label), esc(b.Rollout), short(b.ProtocolDigest.String()), short(b.TaskSet.String()), fmt.Sprint(b.Tasks),
			fmt.Sprint(b.Samples), fmt.Sprint(b.Temperature), fmt.Sprint(b.MaxTurns), fmt.Sprint(b.MaxTokens), fmt.Sprint(b.SQLBudget),
			esc(string(b.Status)), fmt.Sprint(b.Episodes), fmt.Sprint(b.Unfinished), fmt.Sprint(b.TokensIn), fmt.Sprint(b.TokensOut), seqList(b.Seqs)})
	}
	budget.Notes = []string{"Digests are cut to 12 hex digits here; the lineage and report.json give them whole."}
	out = append(out, budget)

	curves := section{ID: "training", Title: "Training curves", Header: []string{"model", "run", "metric", "key", "points", "first", "last", "min", "max", "entries"}}
	for _, c := range r.Curves {
		curves.Rows = append(curves.Rows, []string{esc(c.Label), esc(c.Run), esc(c.Metric), esc(c.Key), fmt.Sprint(c.Steps), fmt.Sprintf("%.6g", c.First),
			fmt.Sprintf("%.6g", c.Last), fmt.Sprintf("%.6g", c.Min), fmt.Sprintf("%.6g", c.Max), seqList(c.Seqs)})
	}
	if len(curves.Rows) == 0 {
		curves.Intro, curves.Header = "No training run of these runs logged reward, KL, learning rate or response length.", nil
	}
	out = append(out, curves)

	lineage := section{ID: "lineage", Title: "Lineage", Intro: "Every input and output of every stage, by digest, with the entry that records it; a training input names the run that wrote it, and a training stage the gate's policy does not name is shown as stage NAME. An evaluation's model identity was reported by the endpoint (server) or only asserted by the user (asserted).",
		Header: []string{"model", "kind", "run", "stage", "role", "name", "digest", "entry"}}
	for _, x := range r.Lineage {
		name := esc(x.Name)
		if x.Source != "" {
			name += " (" + esc(x.Source) + ")"
		}
		if x.ProducedBy != "" {
			name += " (written by " + esc(x.ProducedBy) + ")"
		}
		lineage.Rows = append(lineage.Rows, []string{esc(x.Label), esc(x.Kind), esc(x.Run), esc(x.Stage), esc(string(x.Role)), name, x.Digest.String(), fmt.Sprint(x.Seq)})
	}
	out = append(out, lineage)
	return out
}

// short cuts a blake3:<hex> digest to 12 hex digits for a wide table.
func short(d string) string {
	if len(d) > len("blake3:")+12 {
		return d[:len("blake3:")+12]
	}
	return d
}

// groupNote says, when a claim names a group of difficulty levels, which
// tasks it paired: a reader must not take its Δ for one over every task.
// repeatNote names the claims that are another claim's test again (the
// verdict's Repeats), which carry its figures and result.
func repeatNote(claims []Claim, esc func(string) string) string {
	var same []string
	for _, c := range claims {
		if c.Repeats != "" {
			same = append(same, fmt.Sprintf("%s is the same test as %s", esc(c.Claim), esc(c.Repeats)))
		}
	}
	if len(same) == 0 {
		return ""
	}
	return " " + strings.Join(same, "; ") + ": its two evaluations are of the same two models (the model identities they recorded), so it carries that claim's figures and result and is not counted again in the Holm adjustment."
}

func groupNote(claims []Claim, esc func(string) string) string {
	var on []string
	for _, c := range claims {
		if c.Group != "" && c.Tested {
			on = append(on, fmt.Sprintf("%s: %d tasks", esc(c.Claim), c.Tasks))
		}
	}
	if len(on) == 0 {
		return ""
	}
	return " A claim on a group (A > B on LEVEL+LEVEL) pairs only the tasks whose gold the gradings recorded at one of those difficulty levels (" + strings.Join(on, "; ") + ")."
}
