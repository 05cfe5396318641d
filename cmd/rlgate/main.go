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
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/dataset"
	"github.com/rlgate/rlgate/stages/rollout"
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

const exitCodesHelp = `Exit codes: 0 ok, 1 error, 2 usage, 3 verify/audit/gate failed, 130 interrupted
(Ctrl-C stops the command cleanly; a second Ctrl-C exits at once).`

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

// oneLine makes an error message one printable line: the lines of a
// message that has several (a driver's report of each address it tried)
// joined with "; " (a space after one ending in a colon), and any control
// character, such as one in a run id read from a ledger, escaped
// (ledger.Printable).
func oneLine(msg string) string {
	var b strings.Builder
	for l := range strings.Lines(msg) {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		if s := b.String(); s != "" {
			if strings.HasSuffix(s, ":") {
				b.WriteString(" ")
			} else {
				b.WriteString("; ")
			}
		}
		b.WriteString(l)
	}
	return ledger.Printable(b.String())
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
	case errors.As(err, &ue), errors.Is(err, rollout.ErrIdentity): // --model-identity names a model the endpoint does not serve
		return exitUsage
	case errors.As(err, &cf),
		errors.Is(err, ledger.ErrTampered),      // an entry a decision would read fails its hash
		errors.Is(err, audit.ErrVerdictRefused): // a verdict that does not re-derive
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

// usageError is a command line that cannot be run as written; cmd, when
// known, is the command whose help to point at ("rlgate run").
type usageError struct{ msg, cmd string }

func (e usageError) Error() string {
	if e.cmd == "" {
		return e.msg + " (see rlgate help)"
	}
	return e.msg + " (see " + e.cmd + " --help)"
}

func usagef(format string, args ...any) error { return usageError{msg: fmt.Sprintf(format, args...)} }

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
				Usage:   "a PostgreSQL ledger's blob store: a local `DIR` (blobs) or s3://BUCKET/PREFIX (default: the one rlgate init recorded in the ledger)",
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
			&cli.StringSliceFlag{
				Name:    "data-root",
				Usage:   "`DIR` where this machine keeps the databases and checkpoints a ledger recorded elsewhere, found by the tails of their recorded paths and taken only with their recorded digests (repeatable; tasks, gold and manifests come from the blob store)",
				Sources: cli.EnvVars(dataset.EnvDataRoot),
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

// withDataRoots puts the --data-root directories, made absolute, in the
// context every command runs with (dataset.WithDataRoots); one that is
// not a directory is a usage error.
func withDataRoots(ctx context.Context, cmd *cli.Command) (context.Context, error) {
	var roots []string
	for _, d := range cmd.StringSlice("data-root") {
		abs, err := filepath.Abs(d)
		if err != nil {
			return ctx, usagef("--data-root %s: %v", d, err)
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			return ctx, usagef("--data-root %s is not a directory. Try: --data-root DIR, a directory holding copies of the files the ledger recorded", d)
		}
		roots = append(roots, abs)
	}
	return dataset.WithDataRoots(ctx, roots), nil
}

// setUsageErrors makes every usage error of every command exit 2 with one
// line naming the flag, argument or subcommand: flag-parsing errors,
// arguments given to a command that takes none (no ArgsUsage), and an
// unknown subcommand of a command that only groups others (urfave/cli
// would print "No help topic" and exit 1).
func setUsageErrors(c *cli.Command) {
	c.OnUsageError = func(_ context.Context, cmd *cli.Command, err error, _ bool) error {
		return usageError{cliError(err), cmd.FullName()}
	}
	for _, sub := range c.Commands {
		switch action := sub.Action; {
		case action == nil && len(sub.Commands) > 0:
			sub.Action = func(_ context.Context, cmd *cli.Command) error {
				if !cmd.Args().Present() {
					return cli.ShowSubcommandHelp(cmd)
				}
				var names []string
				for _, s := range cmd.VisibleCommands() {
					names = append(names, s.Name)
				}
				return usageError{fmt.Sprintf("%s has no command %q; it has %s", commandPath(cmd), cmd.Args().First(),
					strings.Join(names, ", ")), cmd.FullName()}
			}
		case action != nil && sub.ArgsUsage == "":
			sub.Action = func(ctx context.Context, cmd *cli.Command) error {
				if cmd.Args().Present() {
					return usageError{fmt.Sprintf("%s takes no arguments, got %q", commandPath(cmd), cmd.Args().First()), cmd.FullName()}
				}
				return action(ctx, cmd)
			}
		}
		setUsageErrors(sub)
	}
}

// commandPath is cmd's name below rlgate ("ckpt diff"), as an error
// message after "rlgate: " names it.
func commandPath(cmd *cli.Command) string {
	return strings.TrimPrefix(cmd.FullName(), cmd.Root().Name+" ")
}

// urfave/cli's flag-parsing and help errors, which cliError rewords.
var (
	flagUnknownRE  = regexp.MustCompile(`^flag provided but not defined: -+(.*)$`)
	flagNoValueRE  = regexp.MustCompile(`^flag needs an argument: -+(.*)$`)
	flagBadValueRE = regexp.MustCompile(`^invalid value (".*") for flag -+([^:]*): (.*)$`)
	flagRequiredRE = regexp.MustCompile(`^Required flags? "(.*)" not set$`)
	helpTopicRE    = regexp.MustCompile(`^No help topic for '(.*)'`)
)

// cliError rewords an error of urfave/cli as rlgate's other errors read,
// naming the flag as the user writes it and what it wants, without Go's
// parse functions ("strconv.ParseFloat: parsing ...").
func cliError(err error) string {
	msg := err.Error()
	if m := helpTopicRE.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("no command %q", m[1])
	}
	if m := flagUnknownRE.FindStringSubmatch(msg); m != nil {
		return "unknown flag " + dashed(m[1])
	}
	if m := flagNoValueRE.FindStringSubmatch(msg); m != nil {
		return dashed(m[1]) + " needs a value"
	}
	if m := flagRequiredRE.FindStringSubmatch(msg); m != nil {
		names := strings.Split(m[1], ", ")
		for i, n := range names {
			names[i] = dashed(n)
		}
		if len(names) == 1 {
			return names[0] + " is required"
		}
		return strings.Join(names, ", ") + " are required"
	}
	if m := flagBadValueRE.FindStringSubmatch(msg); m != nil {
		why := m[3]
		switch {
		case strings.Contains(why, "value out of range"):
			why = "out of range"
		case strings.HasPrefix(why, "strconv.ParseFloat"):
			why = "want a number"
		case strings.HasPrefix(why, "strconv.ParseUint"):
			why = "want a whole number, 0 or more"
		case strings.HasPrefix(why, "strconv.ParseInt"):
			why = "want a whole number"
		case strings.HasPrefix(why, "strconv.ParseBool"), why == "parse error":
			why = "want true or false"
		case strings.HasPrefix(why, "time: "):
			why = "want a duration such as 90s, 15m or 2h"
		}
		return dashed(m[2]) + " " + m[1] + ": " + why
	}
	return msg
}

// dashed is a flag name as help shows it: -b, --alpha.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
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
