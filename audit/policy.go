package audit

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rlgate/rlgate/ledger/untrusted"
	"github.com/rlgate/rlgate/stats"
	"go.yaml.in/yaml/v3"
)

// Claim is a gain a report may state: Better's accuracy exceeds Than's on
// the evaluated dataset, paired task by task.
type Claim struct {
	Better string `json:"better"`
	Than   string `json:"than"`
}

// String renders a claim as a policy file writes it: "rl > base".
func (c Claim) String() string { return c.Better + " > " + c.Than }

// ParseClaim reads "A > B".
func ParseClaim(s string) (Claim, error) {
	a, b, ok := strings.Cut(s, ">")
	c := Claim{Better: strings.TrimSpace(a), Than: strings.TrimSpace(b)}
	if !ok || c.Better == "" || c.Than == "" || strings.ContainsAny(c.Than, "<>") || c.Better == c.Than {
		return Claim{}, fmt.Errorf("claim %q: want LABEL > LABEL, e.g. rl > base", s)
	}
	return c, nil
}

// Policy is what the gate requires. Every audit it names must pass, and
// for every claim the paired bootstrap interval of the accuracy difference
// (at level 1 − Alpha) must lie above 0 and McNemar's exact p, Holm-adjusted
// across the claims, must be below Alpha. Subjects may name the runs, so a
// policy file alone can drive the gate.
type Policy struct {
	Name      string   `json:"name"`
	Claims    []Claim  `json:"claims"`
	Audits    []string `json:"audits"`
	Alpha     float64  `json:"alpha"`
	Resamples int      `json:"resamples"`
	Seed      uint64   `json:"seed"`
	Power     float64  `json:"power"` // at which the minimum detectable effect is given
	Options   Options  `json:"options"`
	Subjects  Subjects `json:"subjects"`
}

// PaperGrade is the built-in policy: rl > base, rl > noupdate and
// sft > base, every audit, α = 0.05 (95% intervals), 10,000 bootstrap
// resamples with seed 1, the minimum detectable effect at 80% power.
func PaperGrade() Policy {
	return Policy{
		Name:      "paper-grade",
		Claims:    []Claim{{LabelRL, LabelBase}, {LabelRL, LabelNoUpdate}, {LabelSFT, LabelBase}},
		Audits:    slices.Clone(Audits),
		Alpha:     stats.DefaultAlpha,
		Resamples: stats.DefaultResamples,
		Seed:      1,
		Power:     0.8,
	}
}

// policyFile is the YAML form of a policy; absent fields keep the
// built-in policy's values.
type policyFile struct {
	Name      string    `yaml:"name"`
	Claims    []string  `yaml:"claims"`
	Audits    *[]string `yaml:"audits"`
	Alpha     float64   `yaml:"alpha"`
	Resamples int       `yaml:"resamples"`
	Seed      *uint64   `yaml:"seed"`
	Power     float64   `yaml:"power"`
	Options   Options   `yaml:"options"`
	Runs      yaml.Node `yaml:"runs"`
	Train     yaml.Node `yaml:"train"`
}

// LoadPolicy reads a YAML policy over the built-in one, refusing unknown
// fields, unknown audits and malformed claims, naming the file.
func LoadPolicy(path string) (Policy, error) {
	raw, err := untrusted.ReadFile(path, untrusted.PolicyLimit)
	if err != nil {
		return Policy{}, fmt.Errorf("read policy: %w", err)
	}
	var f policyFile
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return Policy{}, fmt.Errorf("read policy %s: %w", path, err)
	}
	p := PaperGrade()
	if f.Name != "" {
		p.Name = f.Name
	} else {
		p.Name = path
	}
	if f.Claims != nil {
		p.Claims = nil
		for _, s := range f.Claims {
			c, err := ParseClaim(s)
			if err != nil {
				return Policy{}, fmt.Errorf("read policy %s: %w", path, err)
			}
			p.Claims = append(p.Claims, c)
		}
	}
	if f.Audits != nil {
		for _, a := range *f.Audits {
			if !slices.Contains(Audits, a) {
				return Policy{}, fmt.Errorf("read policy %s: audit %q: want one of %s", path, a, strings.Join(Audits, ", "))
			}
		}
		p.Audits = *f.Audits
	}
	if f.Alpha != 0 {
		p.Alpha = f.Alpha
	}
	if f.Resamples != 0 {
		p.Resamples = f.Resamples
	}
	if f.Seed != nil {
		p.Seed = *f.Seed
	}
	if f.Power != 0 {
		p.Power = f.Power
	}
	p.Options = f.Options
	if p.Subjects.Runs, err = labeledNode(&f.Runs); err != nil {
		return Policy{}, fmt.Errorf("read policy %s: runs: %w", path, err)
	}
	if p.Subjects.Train, err = labeledNode(&f.Train); err != nil {
		return Policy{}, fmt.Errorf("read policy %s: train: %w", path, err)
	}
	if !(p.Alpha > 0 && p.Alpha < 1) {
		return Policy{}, fmt.Errorf("read policy %s: alpha %g: want 0 < alpha < 1", path, p.Alpha)
	}
	return p, nil
}

// labeledNode reads a YAML mapping LABEL: RUN in file order.
func labeledNode(n *yaml.Node) ([]LabeledRun, error) {
	if n.Kind == 0 {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: want a mapping LABEL: RUN", n.Line)
	}
	var out []LabeledRun
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if v.Kind != yaml.ScalarNode || v.Value == "" {
			return nil, fmt.Errorf("line %d: %s: want a run id", v.Line, k.Value)
		}
		out = append(out, LabeledRun{Label: k.Value, Run: v.Value})
	}
	return out, nil
}

// PolicyRef resolves a policy as a pipeline stage names it: "paper-grade"
// is the built-in policy, anything else a policy file, relative to dir
// unless absolute.
func PolicyRef(ref, dir string) (Policy, error) {
	if ref == PaperGrade().Name {
		return PaperGrade(), nil
	}
	if !filepath.IsAbs(ref) {
		ref = filepath.Join(dir, ref)
	}
	return LoadPolicy(ref)
}

// InPipeline returns p with each training run that names a stage of a
// pipeline replaced by that stage's run (stage -> run, as rlgate repro
// decided them), so a policy that gates a pipeline can name its training
// runs, whose ids repro makes up, by their stages.
func (p Policy) InPipeline(runs map[string]string) Policy {
	train := slices.Clone(p.Subjects.Train)
	for i, lr := range train {
		if run, ok := runs[lr.Run]; ok {
			train[i].Run = run
		}
	}
	p.Subjects.Train = train
	return p
}
