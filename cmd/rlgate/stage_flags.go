package main

import (
	"strings"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/metrics"
	"github.com/rlgate/rlgate/stages/runner"
	"github.com/urfave/cli/v3"
)

// stageFlags are the flags of the commands that record a stage, run
// (rlgate run) or imported (rlgate import-run): its name, its run id,
// and its inputs and outputs by digest.
func stageFlags() []cli.Flag {
	return []cli.Flag{jsonFlag(),
		&cli.StringFlag{Name: "stage", Validator: ledger.CheckName, Usage: "stage `NAME` (sft, rl1, eval, ...)", Required: true},
		&cli.StringFlag{Name: "run", Validator: ledger.CheckName, Usage: "run `ID` (default: STAGE-TIME-XXXX)"},
		&cli.StringSliceFlag{Name: "in", Usage: "input `NAME=PATH` (repeatable)"},
		&cli.StringSliceFlag{Name: "out", Usage: "output `NAME=PATH` (repeatable)"},
	}
}

// runSpec turns the command line into a stage spec.
func runSpec(cmd *cli.Command) (runner.Spec, error) {
	spec := runner.Spec{Stage: cmd.String("stage"), Run: cmd.String("run"), Argv: cmd.Args().Slice(),
		Configs: cmd.StringSlice("config"), Timeout: cmd.Duration("timeout"), FlushEvery: cmd.Duration("flush"),
		SkipPreflight: cmd.Bool("skip-preflight"), Stdout: cmd.Root().Writer, Stderr: cmd.Root().ErrWriter}
	if cmd.Bool("json") {
		spec.Stdout = nil // keep stdout clean for the JSON; the output is in the ledger
	}
	if len(spec.Argv) == 0 {
		return spec, usagef("run: give the stage's command after --")
	}
	var err error
	if spec.Inputs, err = namedPaths("in", cmd.StringSlice("in")); err != nil {
		return spec, err
	}
	if spec.Outputs, err = namedPaths("out", cmd.StringSlice("out")); err != nil {
		return spec, err
	}
	if ps := cmd.StringSlice("param"); len(ps) > 0 {
		spec.Params = map[string]string{}
		for _, p := range ps {
			k, v, ok := strings.Cut(p, "=")
			if !ok || k == "" {
				return spec, usagef("--param %q: want KEY=VALUE", p)
			}
			spec.Params[k] = v
		}
	}
	for _, m := range cmd.StringSlice("metrics") {
		path, format, err := metrics.ParseSpec(m)
		if err != nil {
			return spec, usagef("--metrics %q: %v", m, err)
		}
		spec.Metrics = append(spec.Metrics, runner.MetricFile{Path: path, Format: format})
	}
	switch cmd.String("gpu") {
	case "auto":
		spec.GPU = true
	case "off":
	default:
		return spec, usagef("--gpu %q: want auto or off", cmd.String("gpu"))
	}
	return spec, nil
}

func namedPaths(flag string, vals []string) ([]runner.Named, error) {
	var out []runner.Named
	for _, v := range vals {
		k, p, ok := strings.Cut(v, "=")
		if !ok || k == "" || p == "" {
			return nil, usagef("--%s %q: want NAME=PATH", flag, v)
		}
		if err := ledger.CheckName(k); err != nil {
			return nil, usagef("--%s: name %q %v", flag, k, err)
		}
		out = append(out, runner.Named{Name: k, Path: p})
	}
	return out, nil
}
