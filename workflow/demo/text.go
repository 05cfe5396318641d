package demo

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	labdemo "github.com/rlgate/rlgate/lab/demo"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/workflow/audits"
	"github.com/rlgate/rlgate/workflow/gate"
)

// WriteText writes a finished demo: the comparison, the gate's verdict in
// brief, the checks that failed, where the report and pipeline are, and
// how to look inside its ledger.
func (s *Summary) WriteText(w io.Writer) error {
	if s.Comparison != nil {
		fmt.Fprintln(w, "\nBase, SFT, RL and No-update on the eval part:")
		if err := audits.WriteComparison(w, s.Comparison); err != nil {
			return err
		}
	}
	if s.Verdict != nil {
		fmt.Fprintln(w, "\nThe gate (gate.yaml):")
		if err := gate.WriteVerdict(w, s.Verdict, true); err != nil {
			return err
		}
	}
	if len(s.Failed) > 0 {
		fmt.Fprintf(w, "\nFailed: %s\n", strings.Join(slices.Compact(s.Failed), ", "))
	}
	if s.Report != "" {
		fmt.Fprintf(w, "\nReport: %s\n", s.Report)
	}
	fmt.Fprintf(w, "Pipeline: %s (rlgate repro in %s runs it again)\n", filepath.Join(s.Dir, labdemo.PipelineFile), s.Dir)
	_, err := fmt.Fprintf(w, "Browse: rlgate ui --ledger %s\n", filepath.Join(s.Dir, ledger.DefaultDir))
	return err
}
