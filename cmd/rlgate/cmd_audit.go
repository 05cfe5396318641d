package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/ledger"
	"github.com/urfave/cli/v3"
)

func newAuditCommand() *cli.Command {
	return &cli.Command{
		Name:  "audit",
		Usage: "run the checks a reviewer would ask for before believing an RL result",
		Description: "Each subcommand runs one audit, prints every check with its evidence,\n" +
			"records the result in the ledger, and exits 3 when any check fails.\n\n" + exitCodesHelp,
		Commands: append([]*cli.Command{newAuditWeightsCommand()}, newLedgerAuditCommands()...),
	}
}

func newAuditWeightsCommand() *cli.Command {
	return &cli.Command{
		Name:  "weights",
		Usage: "check that training changed the weights and a No-update control did not",
		Description: "Passes when every check passes:\n" +
			"  trained-changed       at least one element of --trained differs from --base\n" +
			"                        (|a−b| > atol + rtol·|a|); the 5 tensors with the\n" +
			"                        largest ‖Δ‖/‖A‖ are reported;\n" +
			"  noupdate-identical    --noupdate, the run trained with lr = 0, has every\n" +
			"                        tensor digest of --base; every tensor that differs is\n" +
			"                        listed. Without --noupdate this check fails: a change\n" +
			"                        cannot be put down to training without the control;\n" +
			"  evaluated-is-trained  with --evaluated, the model identity an evaluation\n" +
			"                        served is --trained's (any sharding of the same weights\n" +
			"                        has the same identity).\n" +
			"Each checkpoint is a directory or a .safetensors file. The result, with\n" +
			"every checkpoint's manifest, is recorded as an audit.weights entry.\n\n" + exitCodesHelp,
		Flags: append([]cli.Flag{jsonFlag,
			&cli.StringFlag{Name: "base", Required: true, Usage: "the base checkpoint training started from (`DIR|FILE`)"},
			&cli.StringFlag{Name: "trained", Required: true, Usage: "the checkpoint training produced (`DIR|FILE`)"},
			&cli.StringFlag{Name: "noupdate", Usage: "the No-update control, the same run with lr = 0 (`DIR|FILE`)"},
			&cli.StringFlag{Name: "evaluated", Usage: "the model identity an evaluation served (`blake3:HEX`)"},
		}, toleranceFlags()...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			tol, err := toleranceFrom(cmd)
			if err != nil {
				return err
			}
			opts := auditWeightsOptions{Dir: ledgerDir(cmd), JSON: cmd.Bool("json"), Weights: audit.WeightsOptions{
				Base: cmd.String("base"), Trained: cmd.String("trained"), NoUpdate: cmd.String("noupdate"), Tolerance: &tol,
			}}
			if s := cmd.String("evaluated"); s != "" {
				d, err := ledger.ParseDigest(s)
				if err != nil {
					return usagef("--evaluated: %v", err)
				}
				opts.Weights.Evaluated = &d
			}
			_, err = runAuditWeights(ctx, opts, cmd.Root().Writer)
			return err
		},
	}
}

type auditWeightsOptions struct {
	Dir     string
	JSON    bool
	Weights audit.WeightsOptions
}

func runAuditWeights(ctx context.Context, opts auditWeightsOptions, w io.Writer) (*audit.WeightsReport, error) {
	l, err := ledger.Open(ctx, opts.Dir) // before hashing, which can take minutes
	if err != nil {
		return nil, err
	}
	defer l.Close()
	r, err := audit.AuditWeights(ctx, opts.Weights)
	if err != nil {
		return nil, err
	}
	if err := r.Record(ctx, l); err != nil {
		return nil, err
	}
	err = emit(w, opts.JSON, r, func(w io.Writer) error { return printWeights(w, r) })
	if err == nil && !r.OK {
		err = checkFailed{fmt.Sprintf("audit weights: %d of %d checks failed (entry %d)", r.Failed, len(r.Findings), r.Seq)}
	}
	return r, err
}

func printWeights(w io.Writer, r *audit.WeightsReport) error {
	t := newTable(w, "checkpoint", "model identity", "tensors", "bytes", "path")
	for _, c := range []struct {
		role string
		c    *audit.WeightsCheckpoint
	}{{"base", &r.Base}, {"trained", &r.Trained}, {"noupdate", r.NoUpdate}} {
		if c.c != nil {
			t.Append(c.role, c.c.Identity.String(), fmt.Sprint(c.c.Tensors), fmt.Sprint(c.c.Size), c.c.Path)
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	for _, f := range r.Findings {
		verdict := "PASS"
		if !f.OK {
			verdict = "FAIL"
		}
		fmt.Fprintf(w, "%s %s: %s\n", verdict, f.Check, ledger.Printable(f.Message))
		if ev, ok := f.Evidence.(audit.ChangeEvidence); ok && len(ev.Top) > 0 {
			t := newTable(w, "most changed tensor", "changed", "max |Δ|", "‖Δ‖/‖A‖")
			for _, d := range ev.Top {
				t.Append(d.Name, fmt.Sprintf("%d of %d", d.Changed, d.Elements), fmt.Sprintf("%.4g", d.MaxAbsDelta), audit.FormatRelChange(d.RelL2Delta))
			}
			if err := t.Render(); err != nil {
				return err
			}
		}
	}
	verdict := "passed"
	if !r.OK {
		verdict = fmt.Sprintf("failed %d of %d checks", r.Failed, len(r.Findings))
	}
	_, err := fmt.Fprintf(w, "weights audit %s; recorded as entry %d\n", verdict, r.Seq)
	return err
}

// ledgerAuditHelp says what each ledger audit checks, for its help text.
var ledgerAuditHelp = map[string][2]string{
	audit.AuditGold: {"check that no gold reached the policy",
		"  no-gold-in-prompts  no system or user message of any recorded request body\n" +
			"                      (prompts, observations, correction prompts) holds the\n" +
			"                      task's gold SQL, normalised (case, white space, quoting,\n" +
			"                      aliases), or a fragment of it --gold-substring long;\n" +
			"  no-gold-fields      the tasks file the rollout read carries no gold field;\n" +
			"  gold-mutation       with --mutate K: K sampled tasks, every sample, re-played\n" +
			"                      beside a mutated gold (against the recorded replies, or\n" +
			"                      --mutate-endpoint at temperature 0) send requests\n" +
			"                      byte-identical to the recorded ones; grades may differ.\n" +
			"The gold is the file beside the tasks, verified against the digest the\n" +
			"grading recorded.\n"},
	audit.AuditSplit: {"check that training never saw the evaluation tasks",
		"  split-task-ids, split-questions (exact once normalised, or bigram Jaccard\n" +
			"  >= --near-duplicate), split-databases (with --split-by-database): the\n" +
			"  imported datasets the --train runs read (--in NAME=DIR) against the tasks\n" +
			"  the --runs evaluated; sft-rl-disjoint: the sft and rl runs' data share no\n" +
			"  task id. An input that rlgate synth or rlgate export wrote (the lineage\n" +
			"  rlgate run records) counts as the task ids that run recorded, with the\n" +
			"  exclusion an export rl --exclude recorded, instead of a whole dataset.\n"},
	audit.AuditBudget: {"check that compared evaluations were held to one budget",
		"  same-dataset, same-task-set, same-protocol, same-grading: the --runs share\n" +
			"  tasks and gold digests, the digest of every database and the SQLite version\n" +
			"  their gradings recorded (database_check; another SQLite fails: it can change\n" +
			"  verdicts), task set, protocol digest (turns, tokens, sampling, SQL timeout\n" +
			"  and row caps) and metric; every difference is listed side by side, and a\n" +
			"  grading on databases that differ from the import (--allow-db-mismatch)\n" +
			"  fails; same-episodes: no grading counted unfinished episodes wrong (eval\n" +
			"  --allow-incomplete); within-budget: each rollout finished (else its\n" +
			"  unfinished episodes are listed) and no episode spent more turns or SQL\n" +
			"  executions than its protocol allows.\n"},
	audit.AuditReward: {"check that the reward signal is alive",
		"  databases-present, gold-self-grade: for the dataset each --train run read\n" +
			"  (graded on its db_root parameter when it has one) and each evaluation's,\n" +
			"  every database exists, has the digest the ledger recorded (the import's, or\n" +
			"  the grading's database_check), and gold graded against itself scores 1 on\n" +
			"  at least 99% of a sample (a wrong database path fails here); a changed\n" +
			"  database fails with both digests named; execution-reward: the\n" +
			"  rl run's logged reward is not constantly 0; kl-growth: its KL in the last\n" +
			"  tenth of training over the first tenth stays under --max-kl-growth;\n" +
			"  zero-variance and sql-timeouts are reported.\n"},
	audit.AuditTraining: {"check that each training run trained",
		"  run-ok: the stage ended ok (else its status, exit code and reason);\n" +
			"  metric-findings: run.end records no problem with the metrics files\n" +
			"  (metric_findings: a parse error, a file never written, a key twice in a\n" +
			"  step); optimizer-steps: at least one optimizer step is\n" +
			"  logged; learning-rate: lr > 0 for a trained run and lr = 0 at every step\n" +
			"  for the noupdate run (from the metrics, else an lr parameter).\n"},
	audit.AuditIdentity: {"check that the evaluated models are the trained ones",
		"  evaluated-is-trained / evaluated-is-base: the model identity each\n" +
			"  evaluation recorded (rlgate eval --model-identity) is the output of the\n" +
			"  --train run with its label (base: the rl run's input); noupdate-identical:\n" +
			"  the noupdate run wrote its input back in every tensor digest;\n" +
			"  trained-changed: the other runs changed their input. Digests only: the\n" +
			"  element rule needs the bytes (rlgate audit weights).\n"},
}

// subjectsFlags name what a ledger audit or the gate looks at.
func subjectsFlags(required bool) []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "runs", Required: required, Usage: "grading runs `LABEL=RUN,...` (base, sft, rl, noupdate), as rlgate eval recorded them"},
		&cli.StringFlag{Name: "train", Usage: "training stage runs `LABEL=RUN,...` (sft, rl, noupdate), as rlgate run recorded them"},
	}
}

// auditOptionFlags tune the ledger audits, each held to the range a policy
// file's option of the same name has (docs/GATE.md).
func auditOptionFlags() []cli.Flag {
	return []cli.Flag{
		&cli.FloatFlag{Name: "max-kl-growth", Value: audit.DefaultMaxKLGrowth, Usage: "reward: bound `RATIO` on KL growth", Validator: optionRange[float64]("max-kl-growth")},
		&cli.IntFlag{Name: "self-grade-sample", Value: audit.DefaultSelfGradeSample, Usage: "reward: `N` gold queries graded against themselves", Validator: optionRange[int]("self-grade-sample")},
		&cli.IntFlag{Name: "gold-substring", Value: audit.DefaultGoldSubstring, Usage: "gold: fragment length `L` in normalised characters", Validator: optionRange[int]("gold-substring")},
		&cli.FloatFlag{Name: "near-duplicate", Value: audit.DefaultNearDuplicate, Usage: "split: bigram Jaccard `J` from which questions are the same", Validator: optionRange[float64]("near-duplicate")},
		&cli.BoolFlag{Name: "split-by-database", Usage: "split: train and eval must share no database"},
		&cli.IntFlag{Name: "mutate", Usage: "gold: re-play `K` sampled tasks of each evaluation beside a mutated gold", Validator: optionRange[int]("mutate")},
		&cli.StringFlag{Name: "mutate-endpoint", Usage: "gold: re-play against this live endpoint `URL` at temperature 0 instead of the recorded replies", Validator: optionRange[string]("mutate-endpoint")},
	}
}

// optionRange checks the flag --name against the range of the policy
// option it sets (name with _ for -).
func optionRange[T any](name string) func(T) error {
	key := strings.ReplaceAll(name, "-", "_")
	return func(v T) error { return audit.CheckOption(key, v) }
}

// subjectsFrom reads --runs and --train.
func subjectsFrom(cmd *cli.Command) (audit.Subjects, error) {
	var s audit.Subjects
	var err error
	if v := cmd.String("runs"); v != "" {
		if s.Runs, err = parseLabels("runs", v); err != nil {
			return s, err
		}
	}
	if v := cmd.String("train"); v != "" {
		if s.Train, err = parseLabels("train", v); err != nil {
			return s, err
		}
	}
	return s, nil
}

// auditOptionsFrom reads the flags of auditOptionFlags that were given
// over base.
func auditOptionsFrom(cmd *cli.Command, base audit.Options) audit.Options {
	if cmd.IsSet("max-kl-growth") {
		base.MaxKLGrowth = cmd.Float("max-kl-growth")
	}
	if cmd.IsSet("self-grade-sample") {
		base.SelfGradeSample = cmd.Int("self-grade-sample")
	}
	if cmd.IsSet("gold-substring") {
		base.GoldSubstring = cmd.Int("gold-substring")
	}
	if cmd.IsSet("near-duplicate") {
		base.NearDuplicate = cmd.Float("near-duplicate")
	}
	if cmd.IsSet("split-by-database") {
		base.SplitByDatabase = cmd.Bool("split-by-database")
	}
	if cmd.IsSet("mutate") {
		base.Mutate = cmd.Int("mutate")
	}
	if cmd.IsSet("mutate-endpoint") {
		base.MutateEndpoint = cmd.String("mutate-endpoint")
	}
	return base
}

func newLedgerAuditCommands() []*cli.Command {
	var out []*cli.Command
	for _, name := range audit.Audits {
		help := ledgerAuditHelp[name]
		out = append(out, &cli.Command{
			Name:  name,
			Usage: help[0],
			Description: "Reads only the ledger (and files it names, verified against their recorded\n" +
				"digests). Every check, passing or not, is printed with the ledger entries\n" +
				"behind it (rlgate show SEQ), and the report is recorded as an audit." + name + "\n" +
				"entry. Checks:\n" + help[1] + "\n" + exitCodesHelp,
			Flags: append(append([]cli.Flag{jsonFlag}, subjectsFlags(false)...), auditOptionFlags()...),
			Action: func(ctx context.Context, cmd *cli.Command) error {
				s, err := subjectsFrom(cmd)
				if err != nil {
					return err
				}
				opts := ledgerAuditOptions{Dir: ledgerDir(cmd), JSON: cmd.Bool("json"), Audit: name, Subjects: s, Options: auditOptionsFrom(cmd, audit.Options{}),
					Notes: cmd.Root().ErrWriter}
				_, err = runLedgerAudit(ctx, opts, cmd.Root().Writer)
				return err
			},
		})
	}
	return out
}

type ledgerAuditOptions struct {
	Dir      string
	JSON     bool
	Audit    string
	Subjects audit.Subjects
	Options  audit.Options
	Notes    io.Writer // hears which run each stage name was taken to be
}

func runLedgerAudit(ctx context.Context, opts ledgerAuditOptions, w io.Writer) (*audit.Report, error) {
	l, err := ledger.Open(ctx, opts.Dir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	if opts.Subjects, err = resolveStages(ctx, l, opts.Subjects, opts.Notes); err != nil {
		return nil, err
	}
	r, err := audit.Run(ctx, l, opts.Audit, opts.Subjects, opts.Options)
	if err != nil {
		return nil, err
	}
	if err := r.Record(ctx, l); err != nil {
		return nil, err
	}
	err = emit(w, opts.JSON, r, func(w io.Writer) error { return printAuditReport(w, r) })
	if err == nil && !r.OK {
		err = checkFailed{fmt.Sprintf("audit %s: %d of %d checks failed (entry %d)", r.Audit, r.Failed, len(r.Findings), r.Seq)}
	}
	return r, err
}

func printAuditReport(w io.Writer, r *audit.Report) error {
	t := newTable(w, "check", "result", "evidence", "finding")
	for _, f := range r.Findings {
		t.Append(f.Check, passFail(f.OK), formatSeqs(f.Seqs), f.Message)
	}
	if err := t.Render(); err != nil {
		return err
	}
	verdict := "passed"
	if !r.OK {
		verdict = fmt.Sprintf("failed %d of %d checks", r.Failed, len(r.Findings))
	}
	_, err := fmt.Fprintf(w, "%s audit %s; recorded as entry %d\n", r.Audit, verdict, r.Seq)
	return err
}

func passFail(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

// formatSeqs prints evidence seqs as "#12 #40", at most 8 of them.
func formatSeqs(seqs []int64) string {
	var b strings.Builder
	for i, s := range seqs {
		if i == 8 {
			fmt.Fprintf(&b, " +%d more", len(seqs)-i)
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "#%d", s)
	}
	return b.String()
}
