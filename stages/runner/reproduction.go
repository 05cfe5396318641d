package runner

import (
	"fmt"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
)

// The verdicts on one output of a reproduction.
const (
	OutputIdentical = "identical" // the same digest as recorded
	OutputDiffers   = "differs"   // written, with another digest: At says where
	OutputMissing   = "missing"   // the reproduction did not write it
)

// ReproducedOutput is the verdict on one recorded output of a run.
type ReproducedOutput struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"` // an artifact kind, or records.KindMetrics for the metric series
	Verdict string `json:"verdict"`
	// At is where the reproduction first differs ("file x.bin: byte offset
	// 17", "tensor layers.3.w: max |Δ| 2.1e-07, 1 of 64 elements differ").
	At string `json:"at,omitempty"`
	// Relocated: identical once the work directory's path written in it is
	// read as the stage's recorded directory (docs/REPRODUCE.md).
	Relocated bool `json:"relocated,omitempty"`
	// As is how the output was compared when not by its bytes: "outcomes"
	// for a summary rlgate eval --json wrote (workflow/reproduce).
	As         string         `json:"as,omitempty"`
	Recorded   *ledger.Digest `json:"recorded,omitempty"`
	Reproduced *ledger.Digest `json:"reproduced,omitempty"`
}

// Reproduction is the body of a reproduce entry: one recorded run run
// again by rlgate reproduce (workflow/reproduce), and the verdict on each
// of its outputs. It is defined here, beside the runs it judges, because
// the gate reads it too (a policy's reproduced: stages).
type Reproduction struct {
	Original string `json:"original"` // the run reproduced
	Stage    string `json:"stage"`    // its stage
	Run      string `json:"run,omitempty"`
	// Reproduced: the stage ran, ended ok, and every output is identical.
	Reproduced bool `json:"reproduced"`
	// Refused says why the stage was not run: an input missing or changed
	// (both digests named), a secret not given again.
	Refused string `json:"refused,omitempty"`
	// Failed is the reproduction's run's status and reason when it did not
	// end ok.
	Failed string `json:"failed,omitempty"`
	// Code says how the code version differs from the recorded one.
	Code    string             `json:"code,omitempty"`
	Outputs []ReproducedOutput `json:"outputs,omitempty"`
}

func init() { records.Register[Reproduction](records.KindReproduce, 1) }

// Why says why a reproduction did not reproduce: the stage refused or
// failed, or its first output that is not identical; "" when it
// reproduced.
func (r Reproduction) Why() string {
	switch {
	case r.Reproduced:
		return ""
	case r.Refused != "":
		return "refused: " + r.Refused
	case r.Failed != "":
		return "failed: " + r.Failed
	}
	for _, o := range r.Outputs {
		if o.Verdict != OutputIdentical {
			if o.At != "" {
				return fmt.Sprintf("output %s %s at %s", o.Name, o.Verdict, o.At)
			}
			return fmt.Sprintf("output %s %s", o.Name, o.Verdict)
		}
	}
	return "not reproduced"
}
