package main

import (
	"encoding/json"
	"github.com/rlgate/rlgate/ledger/records"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/stages/runner"
)

// preflightRun runs a stage reading the imported dataset data through
// rlgate run, whose command creates marker, and returns the exit code and
// stderr.
func preflightRun(t *testing.T, ldir, run, data, marker string, extra ...string) (int, string) {
	t.Helper()
	args := append([]string{"--ledger", ldir, "run", "--stage", "rl", "--run", run, "--gpu", "off", "--in", "data=" + data}, extra...)
	code, _, errOut := rlgate(t, append(args, "--", "sh", "-c", "touch "+marker)...)
	return code, errOut
}

// preflightEntries returns the bodies of run's preflight entries.
func preflightEntries(t *testing.T, ldir, run string) []runner.Preflight {
	t.Helper()
	var out []runner.Preflight
	for _, e := range gateLog(t, ldir, run, records.KindPreflight) {
		var p runner.Preflight
		if err := json.Unmarshal(e.Body, &p); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// preflightEnd returns the status and reason run.end recorded for run.
func preflightEnd(t *testing.T, ldir, run string) (string, string) {
	t.Helper()
	es := gateLog(t, ldir, run, records.KindRunEnd)
	if len(es) != 1 {
		t.Fatalf("%s: %d run.end entries", run, len(es))
	}
	var end runner.EndBody
	if err := json.Unmarshal(es[0].Body, &end); err != nil {
		t.Fatal(err)
	}
	return string(end.Status), end.Reason
}

// TestRunPreflight runs stages on imported Spider data through rlgate run:
// a wrong database root or a corrupted database fails the run before the
// stage starts, naming the databases; the right one records a passed
// pre-flight that the reward audit cites instead of grading again; and
// --skip-preflight starts the stage unchecked, recorded.
func TestRunPreflight(t *testing.T) {
	t.Parallel()
	ldir, data := spiderLedger(t)
	dir := t.TempDir()

	t.Run("wrong database root", func(t *testing.T) {
		marker := filepath.Join(dir, "wrong-root-ran")
		code, errOut := preflightRun(t, ldir, "rl-wrong-root", data, marker, "--param", "db_root="+filepath.Join(dir, "no-such-databases"))
		if code != 1 || !strings.Contains(errOut, "databases the gold needs are missing under "+filepath.Join(dir, "no-such-databases")) ||
			!strings.Contains(errOut, "concert_singer") || !strings.Contains(errOut, "the stage was not started") {
			t.Fatalf("exit %d, want 1 naming the missing databases: %s", code, errOut)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("the stage ran")
		}
		if status, reason := preflightEnd(t, ldir, "rl-wrong-root"); status != "failed" || !strings.Contains(reason, "concert_singer") {
			t.Errorf("run.end %s: %s", status, reason)
		}
		ps := preflightEntries(t, ldir, "rl-wrong-root")
		if len(ps) != 1 || ps[0].Passed || ps[0].DBRootParam != "db_root" || len(ps[0].Missing) != ps[0].Needed || ps[0].SelfGrade != nil {
			t.Errorf("pre-flight %+v", ps)
		}
	})

	t.Run("corrupted database", func(t *testing.T) {
		root := filepath.Join(dir, "databases")
		if err := os.CopyFS(root, os.DirFS("../../testdata/spider/database")); err != nil {
			t.Fatal(err)
		}
		db := filepath.Join(root, "car_1", "car_1.sqlite")
		raw, err := os.ReadFile(db)
		if err != nil {
			t.Fatal(err)
		}
		raw[len(raw)-1] ^= 0x01
		if err := os.WriteFile(db, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		marker := filepath.Join(dir, "corrupt-ran")
		code, errOut := preflightRun(t, ldir, "rl-corrupt", data, marker, "--param", "trainer.db_root="+root)
		if code != 1 || !strings.Contains(errOut, "1 databases under "+root+" (parameter trainer.db_root) differ from the digests the import") ||
			!strings.Contains(errOut, "car_1 ("+db) {
			t.Fatalf("exit %d, want 1 naming car_1: %s", code, errOut)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatal("the stage ran")
		}
		if status, _ := preflightEnd(t, ldir, "rl-corrupt"); status != "failed" {
			t.Errorf("run.end %s", status)
		}
	})

	t.Run("right database root", func(t *testing.T) {
		marker := filepath.Join(dir, "right-ran")
		if code, errOut := preflightRun(t, ldir, "rl-right", data, marker); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if _, err := os.Stat(marker); err != nil {
			t.Fatal("the stage did not run")
		}
		ps := preflightEntries(t, ldir, "rl-right")
		if len(ps) != 1 {
			t.Fatalf("%d pre-flight entries", len(ps))
		}
		p := ps[0]
		if !p.Passed || p.SelfGrade == nil || p.SelfGrade.Sample != 200 || p.SelfGrade.Passed < 198 || len(p.Missing)+len(p.Changed) != 0 ||
			len(p.Databases) != p.Needed || p.ImportSeq == 0 {
			t.Fatalf("pre-flight %+v", p)
		}

		// The reward audit cites the pre-flight for the self-grade.
		code, out, errOut := rlgate(t, "--ledger", ldir, "audit", "reward", "--train", "rl=rl-right", "--json")
		if code != 0 && code != exitCheckFailed {
			t.Fatalf("audit reward: exit %d: %s", code, errOut)
		}
		var r audit.Report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		pf := gateLog(t, ldir, "rl-right", records.KindPreflight)[0].Seq
		var got []audit.Finding
		for _, f := range r.Findings {
			if f.Check == audit.CheckGoldSelfGrade {
				got = append(got, f)
			}
		}
		if len(got) != 1 || !got[0].OK || !strings.Contains(got[0].Message, "the pre-flight of rl-right") {
			t.Fatalf("self-grade findings %+v", got)
		}
		if got[0].Seqs[len(got[0].Seqs)-1] != pf {
			t.Errorf("self-grade cites %v, want the pre-flight %d last", got[0].Seqs, pf)
		}
	})

	t.Run("skipped", func(t *testing.T) {
		marker := filepath.Join(dir, "skipped-ran")
		if code, errOut := preflightRun(t, ldir, "rl-skipped", data, marker, "--param", "db_root="+filepath.Join(dir, "no-such-databases"), "--skip-preflight"); code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if _, err := os.Stat(marker); err != nil {
			t.Fatal("the stage did not run")
		}
		if ps := preflightEntries(t, ldir, "rl-skipped"); len(ps) != 0 {
			t.Errorf("pre-flight recorded though skipped: %+v", ps)
		}
		var start runner.StartBody
		if err := json.Unmarshal(gateLog(t, ldir, "rl-skipped", records.KindRunStart)[0].Body, &start); err != nil {
			t.Fatal(err)
		}
		if !start.SkipPreflight {
			t.Error("run.start does not record skip_preflight")
		}
	})
}
