// Command rlgate records agentic RL runs in a hash-chained ledger, audits
// them and gates claims on paired statistics. See README.md and docs/.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/rlgate/rlgate/ledger"
	"github.com/urfave/cli/v3"
)

// Exit codes, the same for every command (documented in each command's help
// through exitCodesHelp).
const (
	exitOK          = 0
	exitError       = 1
	exitUsage       = 2
	exitCheckFailed = 3 // verify, an audit or the gate found problems
	exitInterrupted = 130
)

const exitCodesHelp = `Exit codes: 0 ok, 1 error, 2 usage, 3 verify/audit/gate failed, 130 interrupted.`

func main() { os.Exit(runMain(os.Args)) }

// runMain is the process's life: SIGINT and SIGTERM cancel the command's
// context, which stops its work (and forwards SIGTERM to a running stage).
func runMain(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, args, os.Stdout, os.Stderr)
}

// run executes one command line and maps its outcome to an exit code in one
// place, so every command means the same by each code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	app := newApp(stdout, stderr)
	err := app.Run(ctx, args)
	code := exitCode(ctx, err)
	switch {
	case err == nil:
	case code == exitInterrupted:
		fmt.Fprintln(stderr, "rlgate: interrupted")
	default:
		fmt.Fprintln(stderr, "rlgate:", err)
	}
	return code
}

func exitCode(ctx context.Context, err error) int {
	var ue usageError
	var cf checkFailed
	var se stageExited
	switch {
	case err == nil:
		return exitOK
	case ctx.Err() != nil || errors.Is(err, context.Canceled):
		return exitInterrupted
	case errors.As(err, &ue):
		return exitUsage
	case errors.As(err, &cf):
		return exitCheckFailed
	case errors.As(err, &se):
		return se.code
	}
	return exitError
}

// stageExited is a stage run through rlgate that exited non-zero: rlgate
// exits with the stage's own code, so a script around it sees what the
// trainer said.
type stageExited struct {
	msg  string
	code int
}

func (e stageExited) Error() string { return e.msg }

// usageError is a command line that cannot be run as written.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg + " (see rlgate help)" }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// checkFailed means a check ran and found problems, which the command has
// already printed; it exits 3, not 1.
type checkFailed struct{ msg string }

func (e checkFailed) Error() string { return e.msg }

func newApp(stdout, stderr io.Writer) *cli.Command {
	app := &cli.Command{
		Name:    "rlgate",
		Usage:   "an evidence-gated experiment ledger for agentic RL on Text-to-SQL",
		Version: buildVersion(),
		Description: "rlgate records every stage of a run in a hash-chained ledger, checks it,\n" +
			"and lets a claim through only when audits and paired statistics pass.\n\n" + exitCodesHelp,
		Writer:    stdout,
		ErrWriter: stderr,
		Flags: []cli.Flag{
			&cli.StringFlag{
				Name:    "ledger",
				Usage:   "ledger directory, or a PostgreSQL ledger's postgres://USER@HOST/DB URL",
				Value:   ledger.DefaultDir,
				Sources: cli.EnvVars(ledger.EnvLedger),
			},
			&cli.StringFlag{
				Name:    "blobs",
				Usage:   "a PostgreSQL ledger's blob store: a local `DIR` (blobs) or s3://BUCKET/PREFIX",
				Sources: cli.EnvVars(ledger.EnvBlobs),
			},
			&cli.StringFlag{
				Name:  "s3-endpoint",
				Usage: "S3 server `URL` for --blobs s3://... (default: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, else AWS); credentials only from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN",
			},
			&cli.StringFlag{
				Name:  "s3-region",
				Usage: "S3 `REGION` for --blobs s3://... (default: AWS_REGION, AWS_DEFAULT_REGION, else asked of the server)",
			},
			&cli.BoolFlag{
				Name:  "s3-path-style",
				Usage: "always name the bucket in the URL path, not the host name (the default except on AWS, Google and Alibaba endpoints)",
			},
			&cli.StringFlag{
				Name:    "cache",
				Usage:   "local `DIR` for temporary files of --blobs s3://... (default: one per ledger under the user cache directory)",
				Sources: cli.EnvVars(ledger.EnvCache),
			},
		},
		Commands: []*cli.Command{
			newInitCommand(),
			newHashCommand(),
			newLogCommand(),
			newShowCommand(),
			newHeadCommand(),
			newRunsCommand(),
			newVerifyCommand(),
			newLedgerCommand(),
			newCkptCommand(),
			newAuditCommand(),
			newDataCommand(),
			newGradeCommand(),
			newRolloutCommand(),
			newEvalCommand(),
			newSynthCommand(),
			newExportCommand(),
			newServeReplayCommand(),
			newServePolicyCommand(),
			newTrainCommand(),
			newRunCommand(),
			newImportRunCommand(),
			newMetricsCommand(),
			newReproCommand(),
			newCompareCommand(),
			newGateCommand(),
			newReportCommand(),
			newDemoCommand(),
			newStatsCommand(),
			newKeygenCommand(),
			newPublishCommand(),
			newVerifyBundleCommand(),
		},
		ExitErrHandler: func(context.Context, *cli.Command, error) {}, // run() maps errors to exit codes
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if cmd.Args().Present() {
				return usagef("no command %q", cmd.Args().First())
			}
			return cli.ShowRootCommandHelp(cmd)
		},
	}
	setUsageErrors(app)
	return app
}

// setUsageErrors makes flag-parsing errors of every command exit 2, and
// arguments given to a command that takes none (no ArgsUsage).
func setUsageErrors(c *cli.Command) {
	c.OnUsageError = func(_ context.Context, _ *cli.Command, err error, _ bool) error {
		return usageError{err.Error()}
	}
	for _, sub := range c.Commands {
		if action := sub.Action; action != nil && sub.ArgsUsage == "" {
			sub.Action = func(ctx context.Context, cmd *cli.Command) error {
				if cmd.Args().Present() {
					return usagef("%s takes no arguments, got %q", cmd.FullName(), cmd.Args().First())
				}
				return action(ctx, cmd)
			}
		}
		setUsageErrors(sub)
	}
}

// ledgerDir is the ledger directory from --ledger, RLGATE_LEDGER or the
// default, whichever comes first; a PostgreSQL ledger's URL carries the
// blob store from blobsLocation.
func ledgerDir(cmd *cli.Command) string {
	return ledger.WithBlobs(cmd.String("ledger"), blobsLocation(cmd))
}

// blobsLocation is --blobs or RLGATE_BLOBS, with an S3 location's
// endpoint, region, path style and cache from their flags.
func blobsLocation(cmd *cli.Command) string {
	return ledger.WithS3(cmd.String("blobs"), ledger.S3Options{Endpoint: cmd.String("s3-endpoint"),
		Region: cmd.String("s3-region"), PathStyle: cmd.Bool("s3-path-style"), Cache: cmd.String("cache")})
}
