package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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

// demoOutcomes reads the greedy outcomes of the four evaluations of a
// demo directory, by label.
func demoOutcomes(t *testing.T, dir string) map[string][]ledger.Outcome {
	t.Helper()
	l, err := ledger.OpenReadOnly(context.Background(), filepath.Join(dir, ledger.DefaultDir))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	out := map[string][]ledger.Outcome{}
	for _, label := range labdemo.Labels {
		rows, err := l.Outcomes(context.Background(), labdemo.Options{}.GradingRun(label))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			out[label] = append(out[label], r.Outcome)
		}
	}
	return out
}

// TestDemo runs rlgate demo twice with one seed (at once: its stages
// mostly wait on each other) and checks what the issue asks of it: the gate
// passes with RL beating its own input, SFT (exact McNemar after Holm below 0.05,
// bootstrap interval above 0), the No-update control served the model
// identity of the RL stage's input (SFT), and both runs gave identical
// model identities and outcomes.
// Then each injected defect, run over a copy of the first demo (so repro
// re-runs only what the defect changes), exits 3 naming its check.
func TestDemo(t *testing.T) {
	exe := demoExe(t)
	root := t.TempDir()
	dirs := []string{filepath.Join(root, "a"), filepath.Join(root, "b")}
	sums := make([]*demo.Summary, 2)
	errs := make([]error, 2)
	outs := make([]bytes.Buffer, 2)
	var wg sync.WaitGroup
	for i := range dirs {
		wg.Go(func() {
			sums[i], errs[i] = demo.Run(context.Background(), demo.Options{Dir: dirs[i], Seed: 1, Exe: exe, Progress: &outs[i]})
			if sums[i] != nil {
				errs[i] = errors.Join(errs[i], printDemo(&outs[i], sums[i]))
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("demo %d: %v\n%s", i, err, outs[i].String())
		}
	}
	s := sums[0]
	if s.Verdict == nil || !s.Verdict.OK {
		t.Fatalf("gate did not pass:\n%s", outs[0].String())
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
	if d := cmp.Diff(ids, sums[1].Identities); d != "" {
		t.Errorf("two demos with seed 1 served other models (-first +second):\n%s", d)
	}
	served := map[string]string{}
	for _, label := range labdemo.Labels {
		served[label] = rollout.IdentityServer
	}
	if d := cmp.Diff(served, demoIdentitySources(t, dirs[0])); d != "" {
		t.Errorf("model identity sources of the demo's evaluations (-want +got):\n%s", d)
	}
	if d := cmp.Diff(demoOutcomes(t, dirs[0]), demoOutcomes(t, dirs[1])); d != "" {
		t.Errorf("two demos with seed 1 graded differently (-first +second):\n%s", d)
	}
	if _, err := os.Stat(s.Report); err != nil || !strings.Contains(outs[0].String(), "gate PASSED") || !strings.Contains(outs[0].String(), s.Report) {
		t.Errorf("report %q (%v) or verdict not printed:\n%s", s.Report, err, outs[0].String())
	}

	t.Run("--force deletes only the demo's files", func(t *testing.T) { demoForce(t, dirs[1]) })
	t.Run("its policy gates outside repro; repro --dry-run writes nothing", func(t *testing.T) { demoOutsideRepro(t, dirs[0], exe) })
	t.Run("moved elsewhere gates the same", func(t *testing.T) { demoMoved(t, dirs[0], s.Verdict) })

	for _, in := range labdemo.Injects {
		t.Run("inject "+in.Name, func(t *testing.T) {
			t.Parallel()
			fork := filepath.Join(t.TempDir(), "fork")
			if out, err := exec.Command("cp", "-a", dirs[0], fork).CombinedOutput(); err != nil {
				t.Fatalf("copy demo: %v: %s", err, out)
			}
			v := labdemo.Options{Seed: 1, Inject: in.Name}
			parts, err := labdemo.Write(fork, v)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			s, err := demo.Execute(context.Background(), fork, parts, demo.Options{Seed: 1, Inject: in.Name, Progress: &out})
			if !errors.As(err, new(*demo.CheckFailed)) || exitCode(context.Background(), demoError(err)) != exitCheckFailed || s == nil {
				t.Fatalf("want a check failure (exit 3), got %v:\n%s", err, out.String())
			}
			named := slices.ContainsFunc(s.Failed, func(c string) bool { return strings.HasSuffix(c, ": "+in.Check) })
			if !named || !strings.Contains(err.Error(), in.Check) {
				t.Errorf("failed checks %v, error %q: want %s named", s.Failed, err, in.Check)
			}
		})
	}
}

// demoForce: on copies of a finished demo directory, rlgate demo --force
// beside a user's notes, a key and a ledger entry added after the demo
// deletes nothing, exits 1 and names them; on an untouched copy it
// deletes every file the demo and its stages wrote, the ledger included.
func demoForce(t *testing.T, done string) {
	copyDemo := func(t *testing.T) string {
		fork := filepath.Join(t.TempDir(), "fork")
		if out, err := exec.Command("cp", "-a", done, fork).CombinedOutput(); err != nil {
			t.Fatalf("copy demo: %v: %s", err, out)
		}
		return fork
	}
	t.Run("beside a user's files", func(t *testing.T) {
		fork := copyDemo(t)
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
		fork := copyDemo(t)
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
	defer os.Rename(gone, dir) // the injected variants copy it after this test

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
