package main

import (
	"context"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/manifests"
	"github.com/rlgate/rlgate/workflow/digest"
	"github.com/urfave/cli/v3"
)

func newCkptCommand() *cli.Command {
	return &cli.Command{
		Name:  "ckpt",
		Usage: "checkpoint manifests (per-tensor digests, model identity) and weight diffs",
		Description: "A checkpoint is a directory of safetensors files (sharded with\n" +
			manifests.IndexFile + " or not) or one .safetensors file.\n\n" + exitCodesHelp,
		Commands: []*cli.Command{newCkptDigestCommand(), newCkptDiffCommand()},
	}
}

func newCkptDigestCommand() *cli.Command {
	return &cli.Command{
		Name:      "digest",
		Usage:     "hash a checkpoint: every file, every tensor, and the model identity",
		ArgsUsage: "DIR|FILE",
		Description: "Prints the model identity (a digest over the sorted tensor names, dtypes,\n" +
			"shapes and tensor digests, the same for any sharding of the same weights),\n" +
			"every file's digest, and per tensor its dtype, shape, byte length and the\n" +
			"BLAKE3 of its raw bytes. --record stores the manifest as a blob and appends\n" +
			"a checkpoint artifact entry, named by the identity, to the ledger.\n\n" + exitCodesHelp,
		Flags: []cli.Flag{jsonFlag(),
			&cli.BoolFlag{Name: "record", Usage: "store the manifest in the ledger as a checkpoint artifact"},
			&cli.StringFlag{Name: "name", Validator: ledger.CheckName, Usage: "checkpoint `NAME` for --record (default: the path's base name)"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() != 1 {
				return usagef("ckpt digest needs one DIR or FILE")
			}
			r, err := digest.Checkpoint(ctx, ledgerDir(cmd), cmd.Args().First(), cmd.Bool("record"), cmd.String("name"))
			if err != nil {
				return err
			}
			return emit(cmd, r, r.WriteText)
		},
	}
}

func newCkptDiffCommand() *cli.Command {
	return &cli.Command{
		Name:      "diff",
		Usage:     "compare two checkpoints tensor by tensor",
		ArgsUsage: "A B",
		Description: "For each tensor, Δ = B − A: the elements changed (|a−b| > atol + rtol·|a|\n" +
			"for floats, any differing bit otherwise), the changed fraction, mean and\n" +
			"max |Δ|, ‖Δ‖₂ and ‖Δ‖/‖A‖, sorted by ‖Δ‖/‖A‖, biggest first. A and B must\n" +
			"hold the same tensor names, dtypes and shapes; every mismatch is listed.\n" +
			"--hash first hashes both checkpoints and skips the tensors whose digests\n" +
			"are equal: faster when most tensors are unchanged (a No-update control,\n" +
			"frozen layers), slower when all changed.\n\n" + exitCodesHelp,
		Flags: append([]cli.Flag{jsonFlag(),
			&cli.BoolFlag{Name: "hash", Usage: "hash both checkpoints first, report their identities and skip equal tensors"},
		}, toleranceFlags()...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Len() != 2 {
				return usagef("ckpt diff needs two checkpoints, A and B")
			}
			tol, err := toleranceFrom(cmd)
			if err != nil {
				return err
			}
			r, err := digest.Diff(ctx, cmd.Args().Get(0), cmd.Args().Get(1), tol, cmd.Bool("hash"))
			if err != nil {
				return err
			}
			return emit(cmd, r, r.WriteText)
		},
	}
}

// toleranceFlags are the element-rule flags of every command that diffs
// weights; toleranceFrom reads them.
func toleranceFlags() []cli.Flag {
	return []cli.Flag{
		&cli.FloatFlag{Name: "atol", Value: manifests.DefaultTolerance.ATol, Usage: "absolute tolerance: an element changed when |a−b| > atol + rtol·|a|"},
		&cli.FloatFlag{Name: "rtol", Value: manifests.DefaultTolerance.RTol, Usage: "relative tolerance, times |a| of the first checkpoint"},
	}
}

func toleranceFrom(cmd *cli.Command) (manifests.Tolerance, error) {
	tol := manifests.Tolerance{ATol: cmd.Float("atol"), RTol: cmd.Float("rtol")}
	if !(tol.ATol >= 0 && tol.RTol >= 0) { // NaN too
		return tol, usagef("--atol %g --rtol %g: tolerances must be zero or positive", tol.ATol, tol.RTol)
	}
	return tol, nil
}
