package reproduce

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/stages/runner"
)

// ErrNothingNamed is a reproduce that names no run, stage or pipeline;
// the command line reports it as a usage error.
var ErrNothingNamed = errors.New("reproduce: name runs, --stage or --pipeline")

// RunIn is rlgate reproduce: Run over the ledger in dir, which is opened
// first, so that a missing ledger is said before anything else.
func RunIn(ctx context.Context, dir string, o Options) ([]Result, error) {
	l, err := ledger.Open(ctx, dir)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	if len(o.Runs) == 0 && len(o.Stages) == 0 && o.Pipeline == "" {
		return nil, ErrNothingNamed
	}
	return Run(ctx, l, o)
}

// Failure counts the results whose run did not reproduce, for the
// command's exit status; empty when every run reproduced.
func Failure(rs []Result) string {
	n := 0
	for _, r := range rs {
		if !r.Reproduced {
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("reproduce: %d of %d runs did not reproduce", n, len(rs))
}

// WriteText writes each run's verdict in a line, under its stage.
func WriteText(w io.Writer, rs []Result) error {
	for _, r := range rs {
		fmt.Fprintf(w, "rlgate: %-13s %s\n", r.Stage, verdictLine(r))
	}
	return nil
}

// verdictLine is one run's verdict in a line: what reproduced, or the
// first thing that did not.
func verdictLine(r Result) string {
	head := fmt.Sprintf("run %s -> %s (entry %d): ", r.Original, r.Run, r.Seq)
	switch {
	case r.Refused != "":
		return fmt.Sprintf("run %s (entry %d): not run: %s", r.Original, r.Seq, r.Refused)
	case r.Failed != "":
		return head + "the reproduction " + r.Failed
	case r.Reproduced:
		return head + fmt.Sprintf("identical (%d outputs)", len(r.Outputs))
	}
	var differs []string
	for _, o := range r.Outputs {
		if o.Verdict != runner.OutputIdentical {
			differs = append(differs, o.Name+" "+o.Verdict+" at "+o.At)
		}
	}
	return head + strings.Join(differs, "; ")
}
