package main

import (
	"fmt"
	"io"
	"sort"

	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/stages/grade"
	"github.com/rlgate/rlgate/stages/rollout"
)

// printRolloutSummary prints what rollout, eval and synth played.
func printRolloutSummary(w io.Writer, s *rollout.Summary) {
	want := s.Tasks * s.Samples
	switch s.Status {
	case "complete":
		fmt.Fprintf(w, "rlgate: rollout %s is complete: %d episodes recorded; nothing to do\n", s.Run, s.Episodes)
	case string(records.StatusInterrupted):
		fmt.Fprintf(w, "rlgate: rollout %s interrupted: %d of %d episodes recorded. Run the same command again to resume.\n", s.Run, s.Episodes, want)
	case string(records.StatusFailed):
		fmt.Fprintf(w, "rlgate: rollout %s failed: %d of %d episodes finished, %d unfinished (%d played now). Run the same command again to play the unfinished ones.\n",
			s.Run, s.Episodes, want, s.Unfinished, s.Ran)
	default:
		verb := "ran"
		if s.Resumed {
			verb = "resumed"
		}
		fmt.Fprintf(w, "rlgate: rollout %s %s: %d of %d episodes recorded (%d played now, %d found recorded) in %.1fs, %.1f episodes/s\n",
			s.Run, verb, s.Episodes, want, s.Ran, s.Skipped, s.DurationS, s.EpisodesPerS)
	}
	reasons := make([]string, 0, len(s.StopReasons))
	for r := range s.StopReasons {
		reasons = append(reasons, string(r))
	}
	sort.Strings(reasons)
	fmt.Fprint(w, "rlgate: stop reasons:")
	for _, r := range reasons {
		fmt.Fprintf(w, " %s %d", r, s.StopReasons[rollout.StopReason(r)])
	}
	fmt.Fprintf(w, "\nrlgate: tokens in %d, out %d; protocol %s; entries %d..%d\n", s.TokensIn, s.TokensOut, s.ProtocolDigest, s.StartSeq, s.EndSeq)
	if in, out := s.TokensInPerEpisode, s.TokensOutPerEpisode; in != nil && out != nil {
		fmt.Fprintf(w, "rlgate: tokens per episode: in mean %.1f, p50 %.1f, p95 %.1f; out mean %.1f, p50 %.1f, p95 %.1f\n",
			in.Mean, in.P50, in.P95, out.Mean, out.P50, out.P95)
	}
	if lat := s.RequestLatencyMS; lat != nil {
		fmt.Fprintf(w, "rlgate: request latency over the %d turns played now (retries included): mean %.1f ms, p50 %.1f ms, p95 %.1f ms\n", lat.N, lat.Mean, lat.P50, lat.P95)
	}
	if len(s.Endpoints) < 2 {
		return // one endpoint: the lines above say it all
	}
	for _, e := range s.Endpoints {
		fmt.Fprintf(w, "rlgate: endpoint %s: %d requests, %d transport failures, %d retries", e.Endpoint, e.Requests, e.Failures, e.Retries)
		if lat := e.LatencyMS; lat != nil {
			fmt.Fprintf(w, "; latency p50 %.1f ms, p95 %.1f ms", lat.P50, lat.P95)
		}
		if e.Drained {
			fmt.Fprintf(w, "; DRAINED after %d failures in a row (last: %s)", rollout.DrainAfter, e.DrainError)
		}
		fmt.Fprintln(w)
	}
}

// printGradeSummary prints a grading under title: the file or rollout graded.
func printGradeSummary[I grade.SummaryItem](w io.Writer, title string, s *grade.Summary[I]) {
	fmt.Fprintf(w, "%s  (metric %s, run %s)\n", title, s.Metric, s.Run)
	for _, wn := range s.Warnings {
		fmt.Fprintf(w, "  warning: %s: %s\n", wn.Where, wn.Msg)
	}
	if len(s.ByDifficulty) > 0 {
		order := grade.DifficultyOrder(s.ByDifficulty)
		header := []any{""}
		counts, accs := []any{"count"}, []any{"accuracy"}
		for _, k := range order {
			b := s.ByDifficulty[k]
			header = append(header, k)
			counts = append(counts, fmt.Sprint(b.Total))
			accs = append(accs, fmt.Sprintf("%.2f", b.EX))
		}
		header = append(header, "total")
		counts = append(counts, fmt.Sprint(s.Total))
		accs = append(accs, fmt.Sprintf("%.2f", s.EX))
		t := newTable(w, header...)
		t.Append(counts...)
		if s.Score != nil {
			scores := []any{scoreName(s.Metric)}
			for _, k := range order {
				scores = append(scores, fmt.Sprintf("%.2f", *s.ByDifficulty[k].Score))
			}
			t.Append(append(scores, fmt.Sprintf("%.2f", *s.Score))...)
		}
		t.Append(accs...)
		t.Render()
	}
	if s.Score != nil {
		fmt.Fprintf(w, "%s %.2f%%; ", scoreName(s.Metric), *s.Score)
	}
	accuracy := "execution accuracy"
	if s.Metric == grade.MetricSpiderEM {
		accuracy = "exact match accuracy"
	}
	fmt.Fprintf(w, "%s %.2f%% (%d/%d)", accuracy, s.EX, s.Correct, s.Total)
	if s.Unparsed > 0 {
		fmt.Fprintf(w, "; %d predictions the official parser cannot parse (scored 0; each item's error says why)", s.Unparsed)
	}
	if s.Skipped > 0 {
		fmt.Fprintf(w, "; %d items without a database not graded", s.Skipped)
	}
	if d := s.Databases; d != nil && len(d.Mismatches) > 0 {
		fmt.Fprintf(w, "; graded on %d DATABASES THAT DIFFER FROM THE IMPORT (--allow-db-mismatch)", len(d.Mismatches))
	}
	if s.GoldDefects > 0 {
		fmt.Fprintf(w, "; %d GOLD DEFECTS (gold query failed; scored 0)", s.GoldDefects)
	}
	if s.Fragile > 0 {
		fmt.Fprintf(w, "\n%d fragile verdicts: they rest on a float's last digits or on the order SQLite adds floats in, which another SQLite may do differently (items flagged \"fragile\", with \"fragile_reason\", in --json)", s.Fragile)
	}
	if d := s.Databases; d != nil {
		fmt.Fprintf(w, "\n%d databases checked against the import; SQLite %s", len(d.Digests), d.SQLiteVersion)
	}
	fmt.Fprintf(w, "\nrecorded entries %d..%d\n", s.StartSeq, s.EndSeq)
}

// scoreName is what a metric's item scores are called in a summary.
func scoreName(m grade.Metric) string {
	if m == grade.MetricBirdSoftF1 {
		return "Soft-F1"
	}
	return "score"
}
