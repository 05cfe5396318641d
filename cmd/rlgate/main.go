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

	"github.com/urfave/cli/v3"
)

func main() { os.Exit(runMain(os.Args)) }

// runMain is the process's life: the first SIGINT or SIGTERM cancels the
// command's context, which stops its work (and forwards SIGTERM to a
// running stage); a second one ends the process at once with exit 130,
// even when the first one's cancellation is stuck (a stage that ignores
// SIGTERM, a read that never returns).
func runMain(args []string) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := onSignals(func() {
		fmt.Fprintln(os.Stderr, "rlgate: stopping; interrupt again (Ctrl-C) to exit at once")
		cancel()
	}, func() {
		fmt.Fprintln(os.Stderr, "rlgate: interrupted again; exiting at once")
		os.Exit(exitInterrupted)
	})
	defer stop()
	return run(ctx, args, os.Stdout, os.Stderr)
}

// onSignals calls first at the first SIGINT or SIGTERM and again at the
// second; stop ends the watch.
func onSignals(first, again func()) (stop func()) {
	sigs := make(chan os.Signal, 2)
	done := make(chan struct{})
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		for _, f := range []func(){first, again} {
			select {
			case <-sigs:
				f()
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
	}
}

// run executes one command line and maps its outcome to an exit code in one
// place, so every command means the same by each code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	app := newApp(stdout, stderr)
	err := app.Run(ctx, args)
	if ec := cli.ExitCoder(nil); errors.As(err, &ec) {
		// Only urfave/cli's help command makes these ("help bogus").
		err = usageError{msg: cliError(err)}
	}
	err = fromBelow(err)
	code := exitCode(ctx, err)
	switch {
	case err == nil:
	case code == exitInterrupted:
		fmt.Fprintln(stderr, "rlgate: interrupted")
	default:
		fmt.Fprintln(stderr, "rlgate:", oneLine(err.Error()))
	}
	return code
}

func newApp(stdout, stderr io.Writer) *cli.Command {
	app := &cli.Command{
		Name:    "rlgate",
		Usage:   "an evidence-gated experiment ledger for agentic RL on Text-to-SQL",
		Version: buildVersion(),
		Description: "rlgate records every stage of a run in a hash-chained ledger, checks it,\n" +
			"and lets a claim through only when audits and paired statistics pass.\n\n" + exitCodesHelp,
		Writer:    stdout,
		ErrWriter: stderr,
		Flags:     globalFlags(),
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
			newReproduceCommand(),
			newCompareCommand(),
			newGateCommand(),
			newReportCommand(),
			newDemoCommand(),
			newStatsCommand(),
			newKeygenCommand(),
			newPublishCommand(),
			newVerifyBundleCommand(),
			newUICommand(),
		},
		Before:         withDataRoots,
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
