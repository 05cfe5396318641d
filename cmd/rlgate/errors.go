package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/export"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/workflow/demo"
	"github.com/rlgate/rlgate/workflow/usage"
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

// fromBelow makes the errors of the packages below that mean a usage error
// or a failed check the command line's own, so that every command exits
// 2 or 3 for them alike: a request a workflow refuses as written
// (usage.Error) or an export format it does not know is a
// usageError, pointing at the help; a check that stopped the demo is
// checkFailed.
func fromBelow(err error) error {
	var ue usage.Error
	switch {
	case errors.As(err, &ue), errors.Is(err, export.ErrFormat):
		return usageError{msg: err.Error()}
	case errors.As(err, new(*demo.CheckFailed)):
		return checkFailed{err.Error()}
	}
	return err
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
