package main

import (
	"context"
	"errors"
	"io"

	"github.com/rlgate/rlgate/publish"
	"github.com/rlgate/rlgate/workflow/gate"
	"github.com/urfave/cli/v3"
)

// defaultKey is the signing key publish and run --publish-to use when none
// is named: the file rlgate keygen --out rlgate.key writes.
const defaultKey = "rlgate.key"

func newPublishCommand() *cli.Command {
	return &cli.Command{
		Name:  "publish",
		Usage: "publish a gated training run's checkpoint as a signed bundle (OpenSSF Model Signing v1.0)",
		Description: "Copies the checkpoint that training run RUN wrote (rlgate run --out) to DIR,\n" +
			"checking it is still what the run recorded, with the manifest the run\n" +
			"recorded (rlgate.manifest.json) and the report of the passing verdict's runs\n" +
			"written from the ledger (report/: Markdown, HTML, JSON; rlgate report --check\n" +
			"re-derives it); then writes model.sig, an OpenSSF Model Signing v1.0 bundle over\n" +
			"every file in DIR signed with --key, and rlgate.provenance.json, a signed\n" +
			"in-toto statement about the bundle's root digest naming the stages, their\n" +
			"inputs by digest, the gate verdict with its checks and the ledger head.\n" +
			"Records a publish entry.\n\n" +
			"Refuses (exit 3) unless the latest gate verdict for the checkpoint's model\n" +
			"identity re-derives from the ledger and passed, names RUN as its rl training\n" +
			"run (which ended ok, with the output manifest the verdict bound), and no\n" +
			"earlier verdict for the model failed; --after-failed-verdict REASON publishes\n" +
			"after a failed verdict, and the reason heads the bundle's provenance.\n" +
			"Refuses a DIR that exists and is not empty, and one inside the checkpoint.\n" +
			"The bundle is built beside DIR and renamed into place; a publish that was\n" +
			"killed is finished by the next one to the same DIR (its leftovers deleted,\n" +
			"a complete bundle without its entry recorded, or rebuilt for a newer\n" +
			"verdict). See docs/PUBLISH.md.\n\n" + exitCodesHelp,
		Flags: []cli.Flag{jsonFlag(),
			&cli.StringFlag{Name: "run", Usage: "training run `ID` whose output checkpoint to publish, or its stage (its latest run that ended ok)", Required: true},
			&cli.StringFlag{Name: "to", Usage: "new or empty `DIR` to publish to", Required: true},
			&cli.StringFlag{Name: "key", Value: defaultKey, Usage: "ECDSA private key PEM `FILE` (rlgate keygen)"},
			&cli.StringFlag{Name: "after-failed-verdict", Usage: "publish although an earlier gate verdict for the model failed, for this `REASON` (recorded, shown in the bundle)"},
		},
		Action: func(ctx context.Context, cmd *cli.Command) error {
			res, err := gate.PublishFrom(ctx, ledgerDir(cmd), publish.Options{Run: cmd.String("run"), To: cmd.String("to"), Key: cmd.String("key"),
				AfterFailed: cmd.String("after-failed-verdict")})
			if err != nil {
				return publishError(err)
			}
			return emit(cmd, res, func(w io.Writer) error { return gate.WritePublished(w, res) })
		},
	}
}

// publishError makes a publish the gate or the checkpoint refuses exit 3.
func publishError(err error) error {
	if errors.Is(err, publish.ErrNotGated) || errors.Is(err, publish.ErrCheckpointChanged) {
		return checkFailed{err.Error()}
	}
	return err
}
