package demo

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"text/template"
)

// Injected defects: each is a deliberately broken variant of the demo
// that the gate must reject, and the check that must say so.
const (
	InjectLeak          = "leak"           // the gold SQL is in every evaluation prompt
	InjectNoUpdateDrift = "noupdate-drift" // the No-update control trains with lr > 0
	InjectBudget        = "budget"         // the RL evaluation gets more turns than the others
	InjectWrongDB       = "wrong-db"       // RL stage 1 grades its rewards on the wrong databases
)

// Injects lists the defects with the check that must catch each.
var Injects = []struct{ Name, Check string }{
	{InjectLeak, "no-gold-in-prompts"},
	{InjectNoUpdateDrift, "noupdate-identical"},
	{InjectBudget, "same-protocol"},
	{InjectWrongDB, "databases-present"},
}

// InjectCheck is the check that must reject the defect name; "" for an
// unknown name.
func InjectCheck(name string) string {
	for _, in := range Injects {
		if in.Name == name {
			return in.Check
		}
	}
	return ""
}

// File names the demo writes in its directory.
const (
	PipelineFile = "rlgate.yaml"
	PolicyFile   = "gate.yaml"
	SpiderDir    = "spider" // the unpacked benchmark
	ReportDir    = "report" // rlgate report --out
	BudgetFile   = "protocol-rl.yaml"
)

// Labels are the four evaluated models, in the order tables show them.
var Labels = []string{"base", "sft", "rl", "noupdate"}

// EvalRun is the rollout run of the evaluation of the model label. An
// evaluation the variant changes gets a run of its own, named after the
// defect, so a variant run over a copy of a correct demo's ledger replays
// it rather than finding the correct one finished.
func (o Options) EvalRun(label string) string {
	changed := map[string][]string{InjectLeak: Labels, InjectNoUpdateDrift: {"noupdate"}, InjectBudget: {"rl"}, InjectWrongDB: {"rl"}}[o.Inject]
	if slices.Contains(changed, label) {
		return "eval-" + label + "-" + o.Inject
	}
	return "eval-" + label
}

// GradingRun is the grading run rlgate eval records for the model label.
func (o Options) GradingRun(label string) string { return o.EvalRun(label) + ".spider-greedy" }

// Options choose a demo variant.
type Options struct {
	Seed   int64
	Inject string // "" or one of Injects
}

// Files returns the demo directory's pipeline file, gate policy and any
// other file the variant needs, by name relative to the directory.
func Files(o Options) (map[string][]byte, error) {
	if o.Inject != "" && InjectCheck(o.Inject) == "" {
		return nil, fmt.Errorf("demo: unknown defect %q to inject", o.Inject)
	}
	out := map[string][]byte{}
	var b bytes.Buffer
	if err := pipelineTemplate().Execute(&b, o); err != nil {
		return nil, err
	}
	out[PipelineFile] = b.Bytes()
	b = bytes.Buffer{}
	if err := policyTemplate().Execute(&b, o); err != nil {
		return nil, err
	}
	out[PolicyFile] = b.Bytes()
	if o.Inject == InjectBudget {
		out[BudgetFile] = []byte("# rlgate demo --inject budget: the RL evaluation gets more turns than\n# the others, which the budget audit's same-protocol check must reject.\nmax_turns: 10\n")
	}
	return out, nil
}

// UnpackOptionsFor is how the variant unpacks the benchmark.
func UnpackOptionsFor(o Options) UnpackOptions {
	return UnpackOptions{GoldInQuestions: o.Inject == InjectLeak}
}

// TrainStages maps the gate's training labels to the pipeline's stages;
// repro resolves each stage to its run.
var TrainStages = map[string]string{"sft": "sft", "rl": "rl2", "noupdate": "noupdate"}

var funcs = template.FuncMap{
	"q":      func(s string) string { return fmt.Sprintf("%q", s) },
	"labels": func() []string { return Labels },
	"part":   func(p string) string { return filepath.ToSlash(filepath.Join(SpiderDir, p)) },
	"parts":  func() []string { return []string{PartSFT, PartRL, PartEval} },
	"ckpt": func(label string) string {
		return map[string]string{"base": "ckpt/base", "sft": "ckpt/sft", "rl": "ckpt/rl2", "noupdate": "ckpt/noupdate"}[label]
	},
	"trainStages": func() []string { return []string{"sft", "rl", "noupdate"} },
	"stageOf":     func(label string) string { return TrainStages[label] },
}

// The templates are parsed when first used: parsed at package init, they
// cost every rlgate command their time.
var pipelineTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New(PipelineFile).Funcs(funcs).Parse(`# rlgate demo (seed {{.Seed}}{{if .Inject}}, with the defect --inject {{.Inject}}{{end}}): the whole
# pipeline on the embedded Spider dev benchmark (spider/: eval on databases
# of its own, sft and rl on the others) with the reference policy (rlgate
# serve-policy) and trainer (rlgate train). Written by rlgate demo, which
# ran it with rlgate repro; run it again in this directory with
#
#   rlgate repro          # stages whose command, params and inputs are unchanged are skipped
#   rlgate report --out report
#
# (rlgate on PATH: go install ./cmd/rlgate in the rlgate checkout). The
# compare stage is gated by gate.yaml: the claims of RL after SFT, rl > sft,
# rl > noupdate and sft > base, over the four evaluations, with every audit.
# Commands that record a tasks directory get it as "$PWD/data/...", an
# absolute path, so the gate can read it from wherever it runs; a copy of
# this directory elsewhere gates the same with rlgate --data-root COPY.
stages:
{{- range parts}}
  import_{{.}}:
    cmd: [rlgate, data, import, spider, --name, spider-{{.}}, --dev, {{part .}}/dev.json,
          --gold, {{part .}}/dev_gold.sql, --db-root, {{part .}}/database, --out, data/{{.}}, --force]
    deps:
      dev: {{part .}}/dev.json
      gold: {{part .}}/dev_gold.sql
      databases: {{part .}}/database
    outs:
      data: data/{{.}}
    gpu: off
{{- end}}

  # The Base checkpoint: the reference policy's initial weights.
  base:
    cmd: [rlgate, train, init, --out, ckpt/base, --seed, "{{.Seed}}"]
    outs:
      ckpt: ckpt/base
    gpu: off

  # Cold-start synthesis: the Base policy, served, samples trajectories on
  # the sft part; those that pass execution match are kept.
  synthesize:
    cmd: [rlgate, serve-policy, --ckpt, ckpt/base, --addr, "127.0.0.1:0", --,
          sh, -c, 'rlgate synth --tasks "$PWD/data/sft" --endpoint "$RLGATE_ENDPOINT" --model refpolicy --model-identity "$RLGATE_MODEL_IDENTITY"
            --samples-per-question 4 --run synth --seed {{.Seed}} --out synth']
    deps:
      policy: ckpt/base
      data: data/sft
    outs:
      synthesized: synth
    gpu: off

  sft:
    cmd: [rlgate, train, sft, --init, ckpt/base, --data, synth/trajectories.jsonl, --tasks, data/sft,
          --out, ckpt/sft, --seed, "{{.Seed}}", --metrics-out, logs/sft.jsonl]
    deps:
      base: ckpt/base
      data: data/sft
      trajectories: synth/trajectories.jsonl
    outs:
      ckpt: ckpt/sft
    metrics: [logs/sft.jsonl:verl]
    gpu: off

  # GRPO with DAPO dynamic sampling and clipping 0.2 / 0.28 on the rl part.
  rl1:
    cmd: [rlgate, train, grpo, --init, ckpt/sft, --tasks, data/rl, --db-root, {{if eq .Inject "wrong-db"}}{{part "eval"}}{{else}}{{part "rl"}}{{end}}/database,
          --out, ckpt/rl1, --group-size, "8", --seed, "{{.Seed}}", --metrics-out, logs/rl1.jsonl]
    deps:
      base: ckpt/sft
      data: data/rl
    outs:
      ckpt: ckpt/rl1
    params:
      # the databases the rewards are graded on: rlgate run's pre-flight
      # grades the gold against itself there before the stage starts{{if eq .Inject "wrong-db"}}
      # (--inject wrong-db: the eval part's databases, not the rl part's){{end}}
      db_root: {{if eq .Inject "wrong-db"}}{{part "eval"}}{{else}}{{part "rl"}}{{end}}/database
    metrics: [logs/rl1.jsonl:verl]
    gpu: off

  # Curriculum stage 2: from stage 1, on the tasks stage 1 still answers
  # wrongly (a few dozen, hence the smaller lr), with a KL term to the
  # stage-1 policy.
  rl2:
    cmd: [rlgate, train, grpo, --init, ckpt/rl1, --tasks, data/rl, --db-root, {{part "rl"}}/database,
          --out, ckpt/rl2, --group-size, "8", --unsolved-only, --kl-ref, ckpt/rl1, --kl-coef, "0.001", --lr, "0.01",
          --seed, "{{.Seed}}", --metrics-out, logs/rl2.jsonl]
    deps:
      base: ckpt/rl1
      data: data/rl
    outs:
      ckpt: ckpt/rl2
    params:
      db_root: {{part "rl"}}/database
    metrics: [logs/rl2.jsonl:verl]
    gpu: off

  # The No-update control mirrors the RL stage: RL stage 1's recipe from
  # its own input, the SFT model, with lr = 0{{if eq .Inject "noupdate-drift"}}
  # (--inject noupdate-drift: lr > 0, so its weights drift from SFT){{end}}.
  noupdate:
    cmd: [rlgate, train, grpo, --init, ckpt/sft, --tasks, data/rl, --db-root, {{part "rl"}}/database,
          --out, ckpt/noupdate, --group-size, "8", --lr, "{{if eq .Inject "noupdate-drift"}}0.0001{{else}}0{{end}}",
          --seed, "{{.Seed}}", --metrics-out, logs/noupdate.jsonl]
    deps:
      base: ckpt/sft
      data: data/rl
    outs:
      ckpt: ckpt/noupdate
    params:
      db_root: {{part "rl"}}/database
    metrics: [logs/noupdate.jsonl:verl]
    gpu: off
{{- $o := .}}
{{range labels}}
  # Evaluation of {{.}} on the eval part, greedy, one protocol for all four{{if and (eq . "rl") (eq $o.Inject "budget")}}
  # (--inject budget: but this one gets {{q "protocol-rl.yaml"}}, more turns){{end}}.
  eval_{{.}}:
    cmd: [rlgate, serve-policy, --ckpt, {{ckpt .}}, --addr, "127.0.0.1:0", --,
          sh, -c, 'rlgate eval --endpoint "$RLGATE_ENDPOINT" --model refpolicy --model-identity "$RLGATE_MODEL_IDENTITY"
            --tasks "$PWD/data/eval" --metric spider --run {{$o.EvalRun .}}{{if and (eq . "rl") (eq $o.Inject "budget")}} --protocol protocol-rl.yaml{{end}} --json > evals/{{.}}.json']
    deps:
      model: {{ckpt .}}
      data: data/eval{{if and (eq . "rl") (eq $o.Inject "budget")}}
      protocol: protocol-rl.yaml{{end}}
    outs:
      eval: evals/{{.}}.json
    gpu: off
{{end}}
  # The four evaluations side by side, gated: the stage fails, and
  # rlgate repro with it, unless every check of gate.yaml passes.
  compare:
    cmd: [rlgate, compare, --runs, "{{range $i, $l := labels}}{{if $i}},{{end}}{{$l}}={{$.GradingRun $l}}{{end}}"]
    deps:
{{- range labels}}
      {{.}}: evals/{{.}}.json
{{- end}}
    gate: gate.yaml
    gpu: off
`))
})

var policyTemplate = sync.OnceValue(func() *template.Template {
	return template.Must(template.New(PolicyFile).Funcs(funcs).Parse(`# The demo's gate: the built-in paper-grade-sft policy, for RL that
# follows SFT (claims rl > sft, rl > noupdate and sft > base; every audit;
# bootstrap 95% interval above 0 and exact McNemar p < 0.05 after Holm)
# over the four evaluations of rlgate.yaml. The training runs are named by
# their stages, which rlgate repro resolves to each stage's run.
name: demo-paper-grade
claims: ["rl > sft", "rl > noupdate", "sft > base"]
options:
  split_by_database: true
runs:
{{- range labels}}
  {{.}}: {{$.GradingRun .}}
{{- end}}
train:
{{- range trainStages}}
  {{.}}: {{stageOf .}}
{{- end}}
`))
})
