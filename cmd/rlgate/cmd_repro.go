package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/pipeline"
	"github.com/rlgate/rlgate/workflow/repro"
	"github.com/rlgate/rlgate/workflow/textout"
	"github.com/urfave/cli/v3"
)

func newReproCommand() *cli.Command {
	return &cli.Command{
		Name:      "repro",
		Usage:     "run a pipeline's stages that are out of date, in dependency order",
		ArgsUsage: "[STAGE...]",
		Description: "Reads rlgate.yaml (or --file) and, for the named stages and everything\n" +
			"upstream of them (all stages if none are named), runs each stage whose\n" +
			"command, params, configs or input digests differ from its last successful\n" +
			"run, or whose outputs no longer have the digests that run recorded. Says\n" +
			"why each stage runs or is skipped. Each stage's outputs' directories are made\n" +
			"before it runs. The stages get this command's ledger and blob store as\n" +
			"RLGATE_LEDGER and RLGATE_BLOBS (a password in the URL is masked where the\n" +
			"run records its environment).\n\n" +
			"--dry-run says, runs nothing and writes nothing: the ledger is opened\n" +
			"read-only, gates decide without recording (as gate --dry-run). It also names,\n" +
			"stage by stage, what would fail once the stage runs, and then exits 1: a\n" +
			"command not found on PATH (the first word of the command), an output\n" +
			"directory that cannot be made, a gate policy that is missing or names a\n" +
			"training stage that is neither in the pipeline nor in the ledger, an input\n" +
			"that is missing and that no stage writes.\n\n" +
			"A stage has cmd (a string run by sh -c, or an argv list), deps and outs (a\n" +
			"mapping NAME: PATH, or a list of paths as in dvc.yaml, each named by its\n" +
			"path), params, configs, metrics, timeout, gpu and gate. A stage with\n" +
			"gate: POLICY (a policy file, or paper-grade) is gated once it is up to date\n" +
			"(see rlgate gate); a failed gate fails the stage and nothing downstream runs.\n" +
			"Like rlgate gate, a gate that passes publishes the requests (rlgate run\n" +
			"--publish-to) waiting for its model.\n" +
			"The policy's train: may name a training run by its stage (rl: rl2): repro\n" +
			"takes the run that stage ran, or was up to date with; any other stage name\n" +
			"is that stage's latest run that ended ok (as for rlgate gate). Every gate\n" +
			"policy is loaded and checked before any stage runs.\n\n" + exitCodesHelp,
		Flags: []cli.Flag{jsonFlag,
			&cli.StringFlag{Name: "file", Aliases: []string{"f"}, Value: "rlgate.yaml", Usage: "pipeline `FILE`"},
			&cli.BoolFlag{Name: "dry-run", Usage: "decide and explain, run and record nothing, name what would fail"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			env, err := stageEnviron(cmd)
			if err != nil {
				return err
			}
			opts := reproOptions{Dir: ledgerDir(cmd), JSON: cmd.Bool("json"), File: cmd.String("file"), DryRun: cmd.Bool("dry-run"),
				Stages: cmd.Args().Slice(), Stdout: cmd.Root().Writer, Stderr: cmd.Root().ErrWriter, Environ: env}
			_, err = runRepro(ctx, opts, cmd.Root().Writer)
			return err
		},
	}
}

type reproOptions struct {
	Dir, File      string
	JSON, DryRun   bool
	Stages         []string
	Stdout, Stderr io.Writer
	// Environ is the stages' environment (stageEnviron); nil: rlgate's own.
	Environ []string
}

// stageEnviron is rlgate's environment with the ledger and blob store this
// command was given (--ledger, --blobs and the S3 flags, or their
// variables), as RLGATE_LEDGER and RLGATE_BLOBS with local paths made
// absolute, so the rlgate commands a stage runs record into the same
// ledger from the stage's directory. A password in a PostgreSQL URL
// reaches the stage, which must connect, but not the ledger: run.start
// records RLGATE_* variables through the redaction rule, which masks it.
func stageEnviron(cmd *cli.Command) ([]string, error) {
	abs := func(flag, p string) (string, error) {
		if p == "" {
			return "", nil
		}
		a, err := filepath.Abs(p)
		if err != nil {
			return "", fmt.Errorf("--%s %s: %w", flag, p, err)
		}
		return a, nil
	}
	loc := cmd.String("ledger")
	if !ledger.IsPostgres(loc) {
		var err error
		if loc, err = abs("ledger", loc); err != nil {
			return nil, err
		}
	}
	blobs := cmd.String("blobs")
	if !ledger.IsS3(blobs) {
		var err error
		if blobs, err = abs("blobs", blobs); err != nil {
			return nil, err
		}
	} else {
		cache, err := abs("cache", cmd.String("cache"))
		if err != nil {
			return nil, err
		}
		blobs = ledger.WithS3(blobs, ledger.S3Options{Endpoint: cmd.String("s3-endpoint"), Region: cmd.String("s3-region"), PathStyle: cmd.Bool("s3-path-style"), Cache: cache})
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, ledger.EnvLedger+"=") || strings.HasPrefix(kv, ledger.EnvBlobs+"=")
	})
	env = append(env, ledger.EnvLedger+"="+loc)
	if blobs != "" {
		env = append(env, ledger.EnvBlobs+"="+blobs)
	}
	return env, nil
}

func runRepro(ctx context.Context, opts reproOptions, w io.Writer) ([]pipeline.Decision, error) {
	o := repro.Options{File: opts.File, Stages: opts.Stages, DryRun: opts.DryRun, Environ: opts.Environ}
	if !opts.JSON {
		o.Stdout, o.Stderr = opts.Stdout, opts.Stderr
		o.Progress = func(d pipeline.Decision) {
			fmt.Fprintf(w, "rlgate: %-10s %-9s %s\n", d.Stage, d.Action, strings.Join(d.Reasons, "; "))
			for _, p := range d.Problems {
				fmt.Fprintf(w, "rlgate: %-10s %-9s %s\n", d.Stage, "problem", p)
			}
		}
	}
	ds, err := repro.Run(ctx, opts.Dir, o)
	if err != nil {
		return ds, err
	}
	if opts.JSON {
		if err := textout.Emit(w, true, ds, nil); err != nil {
			return ds, err
		}
	}
	return ds, repro.Stopped(ds, opts.DryRun)
}
