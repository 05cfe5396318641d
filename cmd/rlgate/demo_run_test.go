package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/rlgate/rlgate/ledger/records"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/audit"
	labdemo "github.com/rlgate/rlgate/lab/demo"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/rollout/rollouttest"
	"github.com/rlgate/rlgate/stages/runner"
	"github.com/rlgate/rlgate/workflow/demo"
)

// demoExe is an executable that runs this test binary as the rlgate
// command (see TestMain), for the demo's stages to find as "rlgate".
func demoExe(t *testing.T) string {
	t.Helper()
	self, err := filepath.Abs(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "rlgate")
	if err := os.WriteFile(p, []byte("#!/bin/sh\nRLGATE_TEST_MAIN=1 exec '"+self+"' \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDemo runs rlgate demo with seed 1 and checks what the issue asks
// of it: the gate passes with RL beating its own input, SFT (exact McNemar
// after Holm below 0.05, bootstrap interval above 0), and the No-update
// control served the model identity of the RL stage's input (SFT). The
// gate's claims sft > base and rl > sft are measured on the eval part,
// whose databases the training parts do not hold: that is the proof that
// the reference trainer's SFT on synthesized trajectories and its GRPO
// curriculum (stage 2 with a KL term, whose log TestDemo reads) improve
// on held-out databases. Beside it, at once (its stages mostly wait on
// each other), a second demo directory with seed 1 runs the stages up to
// SFT (demoAgain), which must synthesize and train the same again
// (demoSame). Then, on a copy of the first demo, the injected defect that
// stops a stage before it starts must end the demo in a check failure
// naming its check (demoWrongDB).
func TestDemo(t *testing.T) {
	t.Parallel()
	exe := demoExe(t)
	root := t.TempDir()
	dir, again := filepath.Join(root, "a"), filepath.Join(root, "b")
	var (
		out      bytes.Buffer
		s        *demo.Summary
		err      error
		againOut string
		againErr error
		wg       sync.WaitGroup
	)
	wg.Go(func() {
		s, err = demo.Run(context.Background(), demo.Options{Dir: dir, Seed: 1, Exe: exe, Progress: &out})
	})
	wg.Go(func() { againOut, againErr = demoAgain(again, exe) })
	wg.Wait()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	if againErr != nil {
		t.Fatalf("demo again up to sft: %v\n%s", againErr, againOut)
	}
	if err := s.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	if s.Verdict == nil || !s.Verdict.OK {
		t.Fatalf("gate did not pass:\n%s", out.String())
	}
	for _, c := range s.Verdict.Claims {
		if c.Claim == "rl > sft" && !(c.OK && c.HolmP < 0.05 && c.CI.Lo > 0) {
			t.Errorf("rl > sft: %+v", c)
		}
	}
	if !slices.ContainsFunc(s.Verdict.Claims, func(c audit.ClaimResult) bool { return c.Claim == "rl > sft" }) {
		t.Error("the verdict has no claim rl > sft")
	}
	ids := s.Identities
	if len(ids) != 4 || ids["noupdate"] != ids["sft"] || ids["rl"] == ids["sft"] || ids["sft"] == ids["base"] {
		t.Errorf("model identities served: %v; want No-update = SFT (the RL stage's input), and Base, RL different", ids)
	}
	// Curriculum stage 2 trains with a KL term to stage 1 (--kl-ref):
	// every step it logs must carry it, or the training audit has no KL
	// to read.
	for i, m := range trainMetrics(t, filepath.Join(dir, "logs", "rl2.jsonl")) {
		if _, ok := m["actor/kl_loss"]; !ok {
			t.Fatalf("rl2 (--kl-ref) step %d logs no actor/kl_loss: %v", i+1, m)
		}
	}
	served := map[string]string{}
	for _, label := range labdemo.Labels {
		served[label] = rollout.IdentityServer
	}
	if d := cmp.Diff(served, demoIdentitySources(t, dir)); d != "" {
		t.Errorf("model identity sources of the demo's evaluations (-want +got):\n%s", d)
	}
	if _, err := os.Stat(s.Report); err != nil || !strings.Contains(out.String(), "gate PASSED") || !strings.Contains(out.String(), s.Report) ||
		!strings.HasSuffix(out.String(), "\nBrowse: rlgate ui --ledger "+filepath.Join(dir, ledger.DefaultDir)+"\n") {
		t.Errorf("report %q (%v), verdict or how to browse the ledger not printed:\n%s", s.Report, err, out.String())
	}

	t.Run("--force deletes only the demo's files", func(t *testing.T) { demoForce(t, dir) })
	t.Run("its policy gates outside repro; repro --dry-run writes nothing", func(t *testing.T) { demoOutsideRepro(t, dir, exe) })
	t.Run("moved elsewhere gates the same", func(t *testing.T) { demoMoved(t, dir, s.Verdict) })
	t.Run("seed 1 synthesizes and trains the same again and grades the same model the same", func(t *testing.T) { demoSame(t, dir, again, s) })
	t.Run("inject "+labdemo.InjectWrongDB, func(t *testing.T) { demoWrongDB(t, dir) })
}

// demoCopy copies a finished demo directory, its ledger included, to a
// new directory and returns it.
func demoCopy(t *testing.T, done string) string {
	t.Helper()
	fork := filepath.Join(t.TempDir(), "fork")
	if out, err := exec.Command("cp", "-a", done, fork).CombinedOutput(); err != nil {
		t.Fatalf("copy demo: %v: %s", err, out)
	}
	return fork
}

// demoAgain lays out a second demo directory with seed 1 as rlgate demo
// does (labdemo.Write, a new ledger) and runs with rlgate repro only SFT
// and what it depends on: its import, base and synthesis (the Base policy
// served, sampled by concurrent requests, the one stage no other test
// plays at the demo's scale). The GRPO stages are left out: that the
// trainer's GRPO, with a KL term as RL stage 2 has, writes the same bytes
// and metrics for the same seed, and other bytes for another, is
// TestTrainSameSeedSameBytes's proof, on the same code as the demo's rl1
// and rl2 run. The No-update control, the evaluations and the comparison
// are left out too: the control makes no model of its own (the first
// demo's gate proves it wrote its input, noupdate-identical), and the
// first demo already evaluates one model twice, as SFT and as No-update,
// which demoSame compares.
func demoAgain(dir, exe string) (string, error) {
	ctx := context.Background()
	if err := labdemo.Prepare(ctx, dir, false); err != nil {
		return "", err
	}
	if _, err := labdemo.Write(dir, labdemo.Options{Seed: 1}); err != nil {
		return "", err
	}
	l, err := ledger.Init(ctx, filepath.Join(dir, ledger.DefaultDir))
	if err != nil {
		return "", err
	}
	l.Close()
	return demoRepro(dir, exe, "sft")
}

// demoRepro runs rlgate repro of the stages in the demo directory dir as a
// command of its own, exe first on its PATH so that the stages run it as
// rlgate (a test that runs in parallel cannot set its own PATH).
func demoRepro(dir, exe string, stages ...string) (string, error) {
	args := append([]string{"--ledger", filepath.Join(dir, ledger.DefaultDir), "repro", "-f", filepath.Join(dir, labdemo.PipelineFile)}, stages...)
	cmd := exec.Command(exe, args...)
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "PATH=") }),
		"PATH="+filepath.Dir(exe)+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// demoSame: the second demo (demoAgain) wrote, stage by stage, the
// outputs the first recorded (base, synthesis's trajectories and sft, by
// the digests their run.end entries hold) and the same SFT metrics log.
// The evaluation is proven within the first demo: it evaluated the SFT
// model twice, as sft and as the No-update control (TestDemo checks that
// both served one model identity), in two runs of their own, which must
// play every episode, turn by turn, and grade every task the same.
func demoSame(t *testing.T, first, again string, s *demo.Summary) {
	open := func(dir string) *ledger.Ledger {
		l, err := ledger.OpenReadOnly(context.Background(), filepath.Join(dir, ledger.DefaultDir))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	la, lb := open(first), open(again)
	runs, err := lb.Runs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	againRun := map[string]string{}
	for _, r := range runs {
		againRun[r.Stage] = r.Run
	}
	for _, d := range s.Decisions {
		if !slices.Contains([]string{"base", "synthesize", "sft"}, d.Stage) {
			continue
		}
		if a, b := demoOutputs(t, la, d.Run), demoOutputs(t, lb, againRun[d.Stage]); len(a) == 0 || !maps.Equal(a, b) {
			t.Errorf("stage %s wrote other outputs with seed 1: %s %v, again %s %v", d.Stage, d.Run, a, againRun[d.Stage], b)
		}
	}
	if a, b := trainMetrics(t, filepath.Join(first, "logs", "sft.jsonl")), trainMetrics(t, filepath.Join(again, "logs", "sft.jsonl")); len(a) == 0 || !cmp.Equal(a, b) {
		t.Errorf("sft logged other metrics with seed 1 (-first +again):\n%s", cmp.Diff(a, b))
	}
	o := labdemo.Options{Seed: 1}
	outcomes := func(l *ledger.Ledger, label string) []ledger.Outcome {
		rows, err := l.Outcomes(context.Background(), o.GradingRun(label))
		if err != nil {
			t.Fatal(err)
		}
		var out []ledger.Outcome
		for _, r := range rows {
			out = append(out, r.Outcome)
		}
		return out
	}
	if a, b := outcomes(la, "sft"), outcomes(la, "noupdate"); len(a) == 0 || !cmp.Equal(a, b) {
		t.Errorf("the SFT model graded differently as No-update (-sft +noupdate):\n%s", cmp.Diff(a, b))
	}
	// Every turn too: a reply that changed but was graded the same
	// shows only here.
	a, b := rollouttest.Episodes(t, la, o.EvalRun("sft")), rollouttest.Episodes(t, la, o.EvalRun("noupdate"))
	if d := rollouttest.EpisodesDiff(a, b); len(a) == 0 || d != "" {
		t.Errorf("the SFT model played %d episodes, as No-update otherwise:\n%s", len(a), d)
	}
}

// demoOutputs returns the output digests run's run.end recorded.
func demoOutputs(t *testing.T, l *ledger.Ledger, run string) map[string]ledger.Digest {
	t.Helper()
	for e, err := range l.Entries(context.Background(), ledger.Filter{Kind: records.KindRunEnd, Run: run}) {
		if err != nil {
			t.Fatal(err)
		}
		var end runner.EndBody
		if err := json.Unmarshal(e.Body, &end); err != nil {
			t.Fatal(err)
		}
		return end.Outputs
	}
	t.Fatalf("run %s has no run.end", run)
	return nil
}

// demoWrongDB: the wrong-db defect, run over a copy of the demo (so repro
// runs again only what the defect changes), ends the demo in a check
// failure (exit 3) naming the pre-flight check of RL stage 1 that refused
// to start it. The other defects are proven where their proof lies: the
// gate's rejection of each class on forked ledgers by TestGate ("each
// fault fails for its reason": the leaked gold, No-update weights that
// differ, another protocol, the wrong databases); that each variant writes
// its defect into the demo, and nothing else, by lab/demo's
// TestInjectsWriteTheirDefect and TestUnpackImports; that a gate that
// rejects the demo's experiment is a check failure naming its checks by
// workflow/demo's TestGateRejectionIsACheckFailure. Running them through
// the demo's stages again (most of a minute) would prove nothing more.
func demoWrongDB(t *testing.T, done string) {
	fork := demoCopy(t, done)
	in := labdemo.InjectWrongDB
	parts, err := labdemo.Write(fork, labdemo.Options{Seed: 1, Inject: in})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	s, err := demo.Execute(context.Background(), fork, parts, demo.Options{Seed: 1, Inject: in, Progress: &out})
	if !errors.As(err, new(*demo.CheckFailed)) || exitCode(context.Background(), fromBelow(err)) != exitCheckFailed || s == nil {
		t.Fatalf("want a check failure (exit 3), got %v:\n%s", err, out.String())
	}
	check := labdemo.InjectCheck(in)
	named := slices.ContainsFunc(s.Failed, func(c string) bool { return c == "pre-flight: "+check })
	if !named || !strings.Contains(err.Error(), check) {
		t.Errorf("failed checks %v, error %q: want pre-flight: %s named", s.Failed, err, check)
	}
}

// demoForce: on copies of a finished demo directory, rlgate demo --force
// beside a user's notes, a key and a ledger entry added after the demo
// deletes nothing, exits 1 and names them; on an untouched copy it
// deletes every file the demo and its stages wrote, the ledger included.
func demoForce(t *testing.T, done string) {
	t.Run("beside a user's files", func(t *testing.T) {
		fork := demoCopy(t, done)
		ldir := filepath.Join(fork, ledger.DefaultDir)
		mine := map[string]string{"notes.txt": "my notes\n", "rlgate.key": "my key\n"}
		for name, text := range mine {
			if err := os.WriteFile(filepath.Join(fork, name), []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if code, _, errOut := rlgate(t, "--ledger", ldir, "run", "--stage", "notes", "--run", "mine", "--gpu", "off", "--", "true"); code != exitOK {
			t.Fatalf("run: exit %d: %s", code, errOut)
		}
		head := func() ledger.Head { return headOf(t, ldir) }
		before, entries := demoTree(t, fork), head()
		code, _, errOut := rlgate(t, "demo", "--dir", fork, "--force")
		for _, want := range []string{"notes.txt", "rlgate.key", "ledger entries "} {
			if !strings.Contains(errOut, want) {
				t.Errorf("the refusal does not name %q: %s", want, errOut)
			}
		}
		if code != exitError || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("exit %d, want %d with one line: %s", code, exitError, errOut)
		}
		after := demoTree(t, fork)
		for name := range before {
			if _, ok := after[name]; !ok {
				t.Errorf("--force deleted %s", name)
			}
		}
		for name, text := range mine {
			if after[name] != text {
				t.Errorf("%s: %q after --force, was %q", name, after[name], text)
			}
		}
		if h := head(); h != entries {
			t.Errorf("the ledger's head moved from %s to %s", entries, h)
		}
	})
	t.Run("untouched", func(t *testing.T) {
		fork := demoCopy(t, done)
		if err := labdemo.Prepare(context.Background(), fork, true); err != nil {
			t.Fatal(err)
		}
		if left := demoTree(t, fork); len(left) != 0 {
			t.Errorf("--force left %d files of the demo", len(left))
		}
	})
}

// demoMoved: the demo's ledger and its files, copied to other absolute
// paths (the files into a fresh --data-root, the ledger apart from them)
// with the original directory gone, as on a CI runner, gate check for
// check as where they were recorded, and the demo's own verdict
// re-derives there (rlgate report states it only then). Without
// --data-root the databases are named missing with their digests.
func demoMoved(t *testing.T, dir string, v *audit.Verdict) {
	flag := func(rs []audit.LabeledRun) string {
		var out []string
		for _, r := range rs {
			out = append(out, r.Label+"="+r.Run)
		}
		return strings.Join(out, ",")
	}
	gate := func(ldir, files string, global ...string) (int, audit.Verdict, string) {
		t.Helper()
		args := append(global, "--ledger", ldir, "gate", "--policy", filepath.Join(files, labdemo.PolicyFile), "--runs", flag(v.Policy.Subjects.Runs),
			"--train", flag(v.Policy.Subjects.Train), "--dry-run", "--json")
		code, out, errOut := rlgate(t, args...)
		var got audit.Verdict
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("gate: exit %d: %v: %s", code, err, errOut)
		}
		return code, got, errOut
	}
	code, want, errOut := gate(filepath.Join(dir, ledger.DefaultDir), dir)
	if code != exitOK {
		t.Fatalf("gate where the demo ran: exit %d, failed %v: %s", code, failedChecks(want), errOut)
	}

	elsewhere := t.TempDir()
	data, ldir := filepath.Join(elsewhere, "data-root"), filepath.Join(elsewhere, "ci", "ledger")
	if out, err := exec.Command("cp", "-a", dir, data).CombinedOutput(); err != nil {
		t.Fatalf("copy demo: %v: %s", err, out)
	}
	if err := os.MkdirAll(filepath.Dir(ldir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(data, ledger.DefaultDir), ldir); err != nil {
		t.Fatal(err)
	}
	gone := dir + ".gone"
	if err := os.Rename(dir, gone); err != nil {
		t.Fatal(err)
	}
	defer os.Rename(gone, dir) // the tests after this one copy it

	code, got, errOut := gate(ldir, data, "--data-root", data)
	if code != exitOK {
		t.Errorf("gate moved, with --data-root: exit %d, failed %v: %s", code, failedChecks(got), errOut)
	}
	if d := cmp.Diff(want.Checks, got.Checks); d != "" {
		t.Errorf("checks moved (-where recorded +moved):\n%s", d)
	}
	if code, _, errOut := rlgate(t, "--data-root", data, "--ledger", ldir, "report", "--out", filepath.Join(elsewhere, "report")); code != exitOK {
		t.Errorf("report of the demo's verdict, moved: exit %d: %s", code, errOut)
	}

	code, bare, _ := gate(ldir, data)
	i := slices.IndexFunc(bare.Checks, func(c audit.GateCheck) bool { return c.Name == "audit reward: databases-present" && !c.OK })
	if code != exitCheckFailed || i < 0 || !strings.Contains(bare.Checks[i].Message, "(blake3:") || !strings.Contains(bare.Checks[i].Message, "Try: --data-root DIR") {
		t.Errorf("gate moved, without --data-root: exit %d, failed %v; want databases-present naming digests and --data-root", code, failedChecks(bare))
	}
}
