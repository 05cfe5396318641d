package evaluate

import (
	"fmt"
	"io"
	"sort"

	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/stages/grade"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/synth"
	"github.com/rlgate/rlgate/workflow/textout"
)

// WriteRollout writes what a rollout played as rollout, eval and synth
// print it: the run's state, stop reasons, tokens and latency, and each
// endpoint of a fleet.
func WriteRollout(w io.Writer, s *rollout.Summary) error {
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
		return nil // one endpoint: the lines above say it all
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
	return nil
}

// WriteGrades writes the summary of each graded prediction file, in turn,
// under the file's name (rlgate grade).
func WriteGrades(w io.Writer, out []*grade.FileSummary) error {
	for _, s := range out {
		writeGrade(w, s.Predictions, s)
	}
	return nil
}

// writeGrade writes a grading under title, the file or rollout graded:
// the warnings, the table by difficulty, the accuracy with what it left
// out or flagged, and the entries recorded.
func writeGrade[I grade.SummaryItem](w io.Writer, title string, s *grade.Summary[I]) {
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
		t := textout.NewTable(w, header...)
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

// WriteText writes the rollout's summary, then the grading's as rlgate
// grade writes it, with pass@k when the mode computes it.
func (s *EvalSummary) WriteText(w io.Writer) error {
	rs, ts := s.RolloutSummary, s.TrajectorySummary
	WriteRollout(w, rs)
	if ts.Incomplete {
		fmt.Fprintf(w, "graded over an incomplete rollout: %d of %d episodes unfinished, each counted wrong (--allow-incomplete)\n",
			ts.Unfinished, rs.Tasks*rs.Samples)
	}
	desc := fmt.Sprintf("rollout %s, %s", ts.Rollout, ts.Mode)
	if ts.Mode == grade.ModePassK {
		desc += fmt.Sprintf(" (any of %d samples)", rs.Samples)
	}
	writeGrade(w, desc, ts)
	if ts.PassAtK != nil {
		fmt.Fprintf(w, "pass@%d %.2f%% (unbiased estimator over %d samples per task)\n", ts.K, *ts.PassAtK, rs.Samples)
	}
	return nil
}

// WriteSynth writes the rollout's summary, what was kept and the files
// written with their digests.
func WriteSynth(w io.Writer, s *synth.Summary) error {
	WriteRollout(w, s.Rollout)
	verb := "recorded"
	if s.Status == "complete" {
		verb = "was recorded before; files written again, identical"
	}
	fmt.Fprintf(w, "rlgate: synth %s %s: kept %d of %d trajectories (%d of %d questions have one), graded by %s; entries %d..%d\n",
		s.Run, verb, s.Kept, s.Episodes, s.ExamplesKept, s.Examples, s.Grading, s.StartSeq, s.EndSeq)
	for _, name := range []string{synth.TrajectoriesFile, synth.GoldFile, synth.ExampleIDsFile} {
		fmt.Fprintf(w, "rlgate: wrote %s/%s %s\n", s.Out, name, s.Outputs[name])
	}
	return nil
}
