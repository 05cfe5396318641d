package demo

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/stages/pipeline"
	"github.com/rlgate/rlgate/stages/rollout"
)

// loadVariant writes the files of the variant o into a directory of its
// own and loads its pipeline as rlgate repro does.
func loadVariant(t *testing.T, o Options) (string, map[string]*pipeline.Stage) {
	t.Helper()
	dir := t.TempDir()
	files, err := Files(o)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := pipeline.Load(filepath.Join(dir, PipelineFile))
	if err != nil {
		t.Fatalf("the %q variant's pipeline: %v", o.Inject, err)
	}
	stages := map[string]*pipeline.Stage{}
	for _, s := range f.Stages {
		stages[s.Name] = s
	}
	return dir, stages
}

// argAfter is the argument of cmd that follows flag; "" when there is
// none.
func argAfter(cmd []string, flag string) string {
	if i := slices.Index(cmd, flag); i >= 0 && i+1 < len(cmd) {
		return cmd[i+1]
	}
	return ""
}

// TestInjectsWriteTheirDefect: each injected defect's variant differs
// from the correct demo in the stages that carry the defect, and there by
// the defect itself; every other stage is the correct demo's, so a variant
// run over a copy of a finished demo runs again only what the defect
// changes. That the checks of Injects reject each defect once it is in a
// ledger is proven by cmd/rlgate's TestGate ("each fault fails for its
// reason": the leaked gold, the No-update weights that differ, the other
// protocol; the wrong databases fail its pre-flight, and TestDemo runs the
// wrong-db variant to its exit 3); the leak variant's questions holding
// their gold SQL by TestUnpackImports.
func TestInjectsWriteTheirDefect(t *testing.T) {
	_, clean := loadVariant(t, Options{Seed: 1})
	if UnpackOptionsFor(Options{Seed: 1}).GoldInQuestions {
		t.Error("the correct demo unpacks the benchmark with the gold in its questions")
	}
	// The four evaluations' stages and the comparison name the variant's
	// evaluation runs; the defect's own stage is the first of each list.
	changed := map[string][]string{
		InjectLeak:          {"eval_base", "eval_sft", "eval_rl", "eval_noupdate", "compare"},
		InjectNoUpdateDrift: {"noupdate", "eval_noupdate", "compare"},
		InjectBudget:        {"eval_rl", "compare"},
		InjectWrongDB:       {"rl1", "eval_rl", "compare"},
	}
	for _, in := range Injects {
		t.Run(in.Name, func(t *testing.T) {
			o := Options{Seed: 1, Inject: in.Name}
			dir, stages := loadVariant(t, o)
			var differ []string
			for name, s := range clean {
				v, ok := stages[name]
				if !ok {
					t.Errorf("stage %s is missing", name)
					continue
				}
				if !reflect.DeepEqual(s, v) {
					differ = append(differ, name)
				}
			}
			want := changed[in.Name]
			if d := cmp.Diff(slices.Sorted(slices.Values(want)), slices.Sorted(slices.Values(differ))); d != "" || len(stages) != len(clean) {
				t.Errorf("stages that differ from the correct demo's (-want +got):\n%s", d)
			}
			for _, label := range Labels {
				eval := stages["eval_"+label]
				if run := o.EvalRun(label); !strings.Contains(strings.Join(eval.Cmd, " "), "--run "+run+" ") {
					t.Errorf("eval_%s does not record run %s: %q", label, run, eval.Cmd)
				}
			}
			switch in.Name {
			case InjectLeak:
				if !UnpackOptionsFor(o).GoldInQuestions {
					t.Error("the leak variant unpacks the benchmark without the gold in its questions")
				}
			case InjectNoUpdateDrift:
				lr := func(s *pipeline.Stage) float64 {
					v, err := strconv.ParseFloat(argAfter(s.Cmd, "--lr"), 64)
					if err != nil {
						t.Fatalf("the noupdate stage's --lr: %v: %q", err, s.Cmd)
					}
					return v
				}
				if lr(clean["noupdate"]) != 0 || lr(stages["noupdate"]) <= 0 {
					t.Errorf("noupdate trains with lr %g, the variant's with %g; want 0 and more", lr(clean["noupdate"]), lr(stages["noupdate"]))
				}
			case InjectBudget:
				rl := stages["eval_rl"]
				if !strings.Contains(strings.Join(rl.Cmd, " "), "--protocol "+BudgetFile) || rl.Deps["protocol"] != BudgetFile {
					t.Errorf("eval_rl does not evaluate under %s: %q, deps %v", BudgetFile, rl.Cmd, rl.Deps)
				}
				p, err := rollout.LoadProtocol(filepath.Join(dir, BudgetFile))
				if err != nil {
					t.Fatal(err)
				}
				if def := rollout.DefaultProtocol(); p.MaxTurns <= def.MaxTurns {
					t.Errorf("%s allows %d turns, the others %d; want more", BudgetFile, p.MaxTurns, def.MaxTurns)
				}
				for _, label := range Labels {
					if s := stages["eval_"+label]; label != "rl" && strings.Contains(strings.Join(s.Cmd, " "), "--protocol") {
						t.Errorf("eval_%s evaluates under another protocol too: %q", label, s.Cmd)
					}
				}
			case InjectWrongDB:
				eval, rl := filepath.ToSlash(filepath.Join(SpiderDir, PartEval, "database")), filepath.ToSlash(filepath.Join(SpiderDir, PartRL, "database"))
				if s := clean["rl1"]; argAfter(s.Cmd, "--db-root") != rl || s.Params["db_root"] != rl {
					t.Errorf("the correct rl1 grades on %q (db_root %q), want %s", argAfter(s.Cmd, "--db-root"), s.Params["db_root"], rl)
				}
				if s := stages["rl1"]; argAfter(s.Cmd, "--db-root") != eval || s.Params["db_root"] != eval {
					t.Errorf("the variant's rl1 grades on %q (db_root %q), want the eval part's %s", argAfter(s.Cmd, "--db-root"), s.Params["db_root"], eval)
				}
			}
		})
	}
}
