package audit

import (
	"bytes"
	"fmt"

	"github.com/rlgate/rlgate/ledger"
)

// paperGradeSource is the built-in policy as a policy file would write it:
// the bytes a verdict under paper-grade records as its policy source.
const paperGradeSource = `# rlgate's built-in policy
name: paper-grade
claims: [rl > base, rl > noupdate, sft > base]
audits: [gold, split, budget, reward, training, identity]
alpha: 0.05
resamples: 10000
seed: 1
power: 0.8
`

// PaperGradeSource returns the built-in policy's source bytes.
func PaperGradeSource() []byte { return []byte(paperGradeSource) }

// policyFromSource reads a policy from the source bytes a verdict
// recorded: the built-in policy's own bytes, or a policy file's.
func policyFromSource(name string, raw []byte) (Policy, error) {
	if bytes.Equal(raw, PaperGradeSource()) {
		return PaperGrade(), nil
	}
	return ParsePolicy(name, raw)
}

// Digest is the digest of the policy without its subjects: what a gate
// requires, whatever runs it judges.
func (p Policy) Digest() (ledger.Digest, error) {
	p.Subjects = Subjects{}
	b, err := ledger.CanonicalJSON(p)
	if err != nil {
		return ledger.Digest{}, fmt.Errorf("policy %s: %w", p.Name, err)
	}
	return ledger.Sum(b), nil
}

// Digest is the digest of the runs a gate judges.
func (s Subjects) Digest() (ledger.Digest, error) {
	b, err := ledger.CanonicalJSON(s)
	if err != nil {
		return ledger.Digest{}, err
	}
	return ledger.Sum(b), nil
}
