package audit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/untrusted"
	"github.com/rlgate/rlgate/stats"
	"go.yaml.in/yaml/v3"
)

// Claim is a gain a report may state: Better's accuracy exceeds Than's on
// the evaluated dataset, paired task by task; with On, on the tasks of
// those difficulty levels only (a Group, e.g. "hard+extra").
type Claim struct {
	Better string `json:"better"`
	Than   string `json:"than"`
	On     Group  `json:"on,omitempty"`
}

// String renders a claim as a policy file writes it: "rl > base", or
// "rl > base on hard+extra".
func (c Claim) String() string {
	if c.On != "" {
		return c.Better + " > " + c.Than + " on " + string(c.On)
	}
	return c.Better + " > " + c.Than
}

// ParseClaim reads "A > B" or "A > B on LEVEL+LEVEL...", A and B two
// different plain labels (CheckLabel), the levels official difficulty
// levels (ParseGroup).
func ParseClaim(s string) (Claim, error) {
	a, b, ok := strings.Cut(s, ">")
	than, on, hasOn := strings.Cut(strings.TrimSpace(b), " ")
	c := Claim{Better: strings.TrimSpace(a), Than: than}
	if !ok || !c.plain() {
		return Claim{}, badClaim(s)
	}
	if hasOn {
		levels, isOn := strings.CutPrefix(strings.TrimSpace(on), "on ")
		if !isOn {
			return Claim{}, badClaim(s)
		}
		g, err := ParseGroup(levels)
		if err != nil {
			return Claim{}, fmt.Errorf("claim %q: %w", s, err)
		}
		c.On = g
	}
	return c, nil
}

// plain reports whether the claim is of two different plain labels.
func (c Claim) plain() bool {
	return CheckLabel(c.Better) == nil && CheckLabel(c.Than) == nil && c.Better != c.Than
}

// check refuses a claim that is not of two different plain labels, or
// whose group is not one ParseGroup gives.
func (c Claim) check() error {
	if !c.plain() {
		return badClaim(c.String())
	}
	if c.On == "" {
		return nil
	}
	if g, err := ParseGroup(string(c.On)); err != nil {
		return fmt.Errorf("claim %q: %w", c, err)
	} else if g != c.On {
		return fmt.Errorf("claim %q: write its group as %s", c, g)
	}
	return nil
}

func badClaim(s string) error {
	return fmt.Errorf("claim %q: want LABEL > LABEL, two different plain labels, e.g. rl > base, or LABEL > LABEL on LEVEL+LEVEL, e.g. rl > base on hard+extra", s)
}

// maxLabel bounds a label's length.
const maxLabel = 64

// CheckLabel refuses a label that is not a plain identifier: an ASCII
// letter, then ASCII letters, digits, _ or -, at most 64 in all. Labels are
// written into claims (A > B), tables, reports and JUnit names, where
// spaces, operators, markup or control characters could be misread.
func CheckLabel(s string) error {
	if err := ledger.CheckName(s); s != "" && err != nil {
		return fmt.Errorf("label %q %v", s, err)
	}
	plain := s != "" && len(s) <= maxLabel && isLetter(s[0])
	for i := 0; plain && i < len(s); i++ {
		c := s[i]
		plain = isLetter(c) || c >= '0' && c <= '9' || c == '_' || c == '-'
	}
	if !plain {
		return fmt.Errorf("label %q: want a plain identifier (a letter, then letters, digits, _ or -; at most %d)", s, maxLabel)
	}
	return nil
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// AddLabeledRun appends label → run to rs, the spaces around both trimmed
// (so " base = X " means base=X), refusing a label that is not plain, one
// already in rs and an empty run id. The flags and the policy file read
// their pairs through it; its error names the label, and the caller says
// where it was given.
func AddLabeledRun(rs []LabeledRun, label, run string) ([]LabeledRun, error) {
	label, run = strings.TrimSpace(label), strings.TrimSpace(run)
	if err := CheckLabel(label); err != nil {
		return nil, err
	}
	if slices.ContainsFunc(rs, func(r LabeledRun) bool { return r.Label == label }) {
		return nil, fmt.Errorf("label %q given twice", label)
	}
	if run == "" {
		return nil, fmt.Errorf("label %q: no run id", label)
	}
	return append(rs, LabeledRun{Label: label, Run: run}), nil
}

// Policy is what the gate requires. Every audit it names must pass, and
// for every claim the paired bootstrap interval of the accuracy difference
// (at level 1 − Alpha) must lie above 0 and McNemar's exact p, Holm-adjusted
// across the claims, must be below Alpha. Subjects may name the runs, so a
// policy file alone can drive the gate; they are what the policy judges,
// not part of what it requires (Digest leaves them out).
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
	// Reproduced are the pipeline stages whose latest run must have been
	// reproduced, every output identical, by rlgate reproduce
	// (reproducedChecks); none: nothing is required.
	Reproduced []string `json:"reproduced,omitempty"`
	// Source is the exact text a policy file held (LoadPolicy sets it);
	// the gate records it with the verdict, so the verdict can be
	// re-derived. Nil for a built-in policy, whose text is its own.
	Source []byte `json:"-"`
}

// PaperGradeName is the built-in policy's name.
const PaperGradeName = "paper-grade"

// builtinPolicies are rlgate's own policies by name, with the text each is
// parsed from. Their names are reserved: no policy file may take one, so a
// verdict "under paper-grade" is always under the built-in policy.
var builtinPolicies = map[string]func() []byte{PaperGradeName: PaperGradeSource, PaperGradeSFTName: PaperGradeSFTSource}

// PaperGradeSFTName is the built-in policy for RL that follows SFT.
const PaperGradeSFTName = "paper-grade-sft"

// reservedName reports whether s is, or reads like, a built-in policy's
// name: case and surrounding spaces do not tell policies apart to a reader.
func reservedName(s string) bool {
	for name := range builtinPolicies {
		if strings.EqualFold(strings.TrimSpace(s), name) {
			return true
		}
	}
	return false
}

// PaperGrade is the built-in policy: rl > base, rl > noupdate and
// sft > base, every audit, α = 0.05 (95% intervals), 10,000 bootstrap
// resamples with seed 1, the minimum detectable effect at 80% power.
func PaperGrade() Policy {
	return Policy{
		Name:      PaperGradeName,
		Claims:    []Claim{{Better: LabelRL, Than: LabelBase}, {Better: LabelRL, Than: LabelNoUpdate}, {Better: LabelSFT, Than: LabelBase}},
		Audits:    slices.Clone(Audits),
		Alpha:     stats.DefaultAlpha,
		Resamples: stats.DefaultResamples,
		Seed:      1,
		Power:     0.8,
	}
}

// PaperGradeSFT is paper-grade for a pipeline whose RL stage starts from
// the SFT model: claims rl > sft (what the RL stage added to its own
// input), rl > noupdate (the same input through the RL stage with lr = 0)
// and sft > base. Under paper-grade, rl > base would credit SFT's gain to
// RL, and rl > noupdate would compare RL with the SFT model, a claim it
// would not name. The gate takes it in place of paper-grade when the rl
// run descends from the sft run's output (ForLineage).
func PaperGradeSFT() Policy {
	p := PaperGrade()
	p.Name = PaperGradeSFTName
	p.Claims = []Claim{{Better: LabelRL, Than: LabelSFT}, {Better: LabelRL, Than: LabelNoUpdate}, {Better: LabelSFT, Than: LabelBase}}
	return p
}

// PaperGradeSource is the text ParsePolicy reads as PaperGrade(), so a
// verdict under the built-in policy can store its policy's bytes as one
// under a policy file does, and be re-derived the same way. It is written
// from PaperGrade(), so the two cannot drift apart.
func PaperGradeSource() []byte { return builtinSource(PaperGrade()) }

// PaperGradeSFTSource is the text ParsePolicy reads as PaperGradeSFT().
func PaperGradeSFTSource() []byte { return builtinSource(PaperGradeSFT()) }

// builtinSource writes a built-in policy's text. NB: recorded verdicts
// hold paper-grade's text byte for byte; changing it refuses them.
func builtinSource(p Policy) []byte {
	claims := make([]string, len(p.Claims))
	for i, c := range p.Claims {
		claims[i] = fmt.Sprintf("%q", c.String())
	}
	return fmt.Appendf(nil, "# rlgate's built-in gate policy (docs/GATE.md); every audit option at its default.\n"+
		"name: %s\nclaims: [%s]\naudits: [%s]\nalpha: %g\nresamples: %d\nseed: %d\npower: %g\n",
		p.Name, strings.Join(claims, ", "), strings.Join(p.Audits, ", "), p.Alpha, p.Resamples, p.Seed, p.Power)
}

// MaxPolicySize bounds a policy's text; real policies are a few hundred
// bytes.
const MaxPolicySize = 64 << 10

// maxPolicyName bounds the name a policy file gives itself.
const maxPolicyName = 128

// setting is a number, switch or string a policy sets, with its allowed
// range: the one table the parser, Check and Differences read.
type setting struct {
	key    string // as the policy file writes it
	option bool   // under options:, where 0 (or "") takes the audits' default
	ptr    func(*Policy) any
	ok     func(any) bool // nil: every value of the type
	want   string         // the allowed range, as errors and docs/GATE.md state it
}

// num adapts a range on float64 to a setting's float64 or int value.
func num(in func(x float64) bool) func(any) bool {
	return func(v any) bool {
		switch x := v.(type) {
		case float64:
			return in(x)
		case int:
			return in(float64(x))
		}
		return false
	}
}

// maxSeed is the largest seed the ledger's canonical JSON holds exactly.
const maxSeed = 1 << 53

var settings = []setting{
	{key: "alpha", ptr: func(p *Policy) any { return &p.Alpha }, ok: num(func(x float64) bool { return x > 0 && x <= 0.1 }), want: "0 < alpha ≤ 0.1"},
	{key: "resamples", ptr: func(p *Policy) any { return &p.Resamples }, ok: num(func(x float64) bool { return x >= 1000 && x <= 1_000_000 }), want: "1,000 ≤ resamples ≤ 1,000,000"},
	{key: "seed", ptr: func(p *Policy) any { return &p.Seed }, ok: func(v any) bool { return v.(uint64) <= maxSeed }, want: "0 ≤ seed ≤ 2^53"},
	{key: "power", ptr: func(p *Policy) any { return &p.Power }, ok: num(func(x float64) bool { return x >= 0.5 && x < 1 }), want: "0.5 ≤ power < 1"},
	{key: "max_kl_growth", option: true, ptr: func(p *Policy) any { return &p.Options.MaxKLGrowth }, ok: num(func(x float64) bool { return x >= 1 && x <= 100 }), want: "1 ≤ max_kl_growth ≤ 100"},
	{key: "kl_floor", option: true, ptr: func(p *Policy) any { return &p.Options.KLFloor }, ok: num(func(x float64) bool { return x > 0 && x <= 0.01 }), want: "0 < kl_floor ≤ 0.01"},
	{key: "self_grade_sample", option: true, ptr: func(p *Policy) any { return &p.Options.SelfGradeSample }, ok: num(func(x float64) bool { return x >= 20 && x <= 100_000 }), want: "20 ≤ self_grade_sample ≤ 100,000"},
	{key: "self_grade_min", option: true, ptr: func(p *Policy) any { return &p.Options.SelfGradeMin }, ok: num(func(x float64) bool { return x >= 0.9 && x <= 1 }), want: "0.9 ≤ self_grade_min ≤ 1"},
	{key: "gold_substring", option: true, ptr: func(p *Policy) any { return &p.Options.GoldSubstring }, ok: num(func(x float64) bool { return x >= minWholeGold && x <= 200 }), want: fmt.Sprintf("%d ≤ gold_substring ≤ 200", minWholeGold)},
	{key: "near_duplicate", option: true, ptr: func(p *Policy) any { return &p.Options.NearDuplicate }, ok: num(func(x float64) bool { return x >= 0.5 && x <= 1 }), want: "0.5 ≤ near_duplicate ≤ 1"},
	{key: "split_by_database", option: true, ptr: func(p *Policy) any { return &p.Options.SplitByDatabase }},
	{key: "mutate", option: true, ptr: func(p *Policy) any { return &p.Options.Mutate }, ok: num(func(x float64) bool { return x >= 0 && x <= 10_000 }), want: "0 ≤ mutate ≤ 10,000"},
	{key: "mutate_endpoint", option: true, ptr: func(p *Policy) any { return &p.Options.MutateEndpoint }, ok: func(v any) bool { return endpointOK(v.(string)) },
		want: "an http:// or https:// URL with a host and no user or password, at most 2,048 characters"},
}

// CheckOption refuses a value of the audit option key (as a policy file's
// options: name it) outside the range a policy file may give it; the
// flags that set options check their values through it as they are read.
func CheckOption(key string, v any) error {
	i := slices.IndexFunc(settings, func(s setting) bool { return s.option && s.key == key })
	if i < 0 {
		return fmt.Errorf("unknown option %q: want one of %s", key, strings.Join(optionKeys(), ", "))
	}
	if s := settings[i]; s.ok != nil && !s.ok(v) {
		return fmt.Errorf("want %s", s.want)
	}
	return nil
}

// endpointOK accepts "" (the recorded replies) or a plain http(s) URL: the
// policy is stored in every verdict, so it must not carry credentials.
func endpointOK(s string) bool {
	if s == "" {
		return true
	}
	u, err := url.Parse(s)
	return err == nil && len(s) <= 2048 && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil
}

// value is the setting's value in p.
func (s setting) value(p *Policy) any {
	switch v := s.ptr(p).(type) {
	case *float64:
		return *v
	case *int:
		return *v
	case *uint64:
		return *v
	case *bool:
		return *v
	case *string:
		return *v
	}
	panic("audit: setting " + s.key + " of an unlisted type")
}

// kind says what a YAML value of the setting must be, and which YAML tags
// are one: a fraction is no count (the YAML decoder would truncate it).
func (s setting) kind(p *Policy) (string, []string) {
	switch s.ptr(p).(type) {
	case *float64:
		return "a number", []string{"!!int", "!!float"}
	case *int, *uint64:
		return "a whole number", []string{"!!int"}
	case *bool:
		return "true or false", []string{"!!bool"}
	}
	return "a string", []string{"!!str"}
}

// checkValue refuses the setting's value in p when it is out of range.
func (s setting) checkValue(p *Policy) error {
	if s.ok == nil || s.ok(s.value(p)) {
		return nil
	}
	return fmt.Errorf("%s %s: want %s", s.key, show(s.value(p)), s.want)
}

// show renders a setting's value as a policy file would write it.
func show(v any) string {
	if s, ok := v.(string); ok {
		if s == "" {
			return "none"
		}
		return s
	}
	return fmt.Sprint(v)
}

// withDefaults is p with every audit option at the value the audits take.
func (p Policy) withDefaults() Policy {
	p.Options = p.Options.withDefaults()
	return p
}

// fieldError is a refusal of one field of a policy, located by the parser.
type fieldError struct {
	key string // top-level field or option
	err error
}

func (e *fieldError) Error() string { return e.err.Error() }

// Check refuses a policy that says nothing or more than it can hold: no
// name, no claims, no audits, an unknown or repeated audit, a repeated claim, a
// label that is not plain or is given twice, a setting out of its range
// (docs/GATE.md lists them), or a re-play endpoint without a re-play.
// ParsePolicy runs it on every policy it returns; run it again after
// changing a policy (flags over a policy file).
func (p Policy) Check() error {
	field := func(key string, format string, args ...any) error {
		return &fieldError{key, fmt.Errorf(format, args...)}
	}
	if p.Name == "" {
		return field("name", "no name; Try: name: MY-POLICY")
	}
	if len(p.Claims) == 0 {
		return field("claims", `claims: none; a policy must claim something, e.g. claims: ["rl > base"]`)
	}
	for i, c := range p.Claims {
		if err := c.check(); err != nil {
			return field("claims", "claims: %w", err)
		}
		if slices.Contains(p.Claims[:i], c) {
			return field("claims", "claims: %s given twice", c)
		}
	}
	if len(p.Audits) == 0 {
		return field("audits", "audits: none; a policy must run at least one audit (%s)", strings.Join(Audits, ", "))
	}
	for i, a := range p.Audits {
		if !slices.Contains(Audits, a) {
			return field("audits", "audits: %q: want one of %s", a, strings.Join(Audits, ", "))
		}
		if slices.Contains(p.Audits[:i], a) {
			return field("audits", "audits: %s given twice", a)
		}
	}
	for i, st := range p.Reproduced {
		if st == "" || strings.TrimSpace(st) != st || strings.ContainsFunc(st, func(r rune) bool { return !unicode.IsPrint(r) }) {
			return field("reproduced", "reproduced: %q: want a stage's name", st)
		}
		if slices.Contains(p.Reproduced[:i], st) {
			return field("reproduced", "reproduced: %s given twice", st)
		}
	}
	d := p.withDefaults()
	for _, s := range settings {
		if err := s.checkValue(&d); err != nil {
			return &fieldError{s.key, err}
		}
	}
	if err := p.sameEvaluations(); err != nil {
		return field("claims", "%w", err)
	}
	if p.Options.MutateEndpoint != "" && p.Options.Mutate == 0 {
		return field("mutate_endpoint", "mutate_endpoint is set but mutate is 0, so nothing is re-played; Try: mutate: 20, or drop mutate_endpoint")
	}
	for _, sub := range []struct {
		key  string
		runs []LabeledRun
	}{{"runs", p.Subjects.Runs}, {"train", p.Subjects.Train}} {
		var rs []LabeledRun
		for _, r := range sub.runs {
			var err error
			if rs, err = AddLabeledRun(rs, r.Label, r.Run); err != nil {
				return field(sub.key, "%s: %w", sub.key, err)
			}
		}
	}
	return nil
}

// sameEvaluations refuses claims that, under the runs the policy names,
// compare one evaluation with itself, or the same two evaluations on the
// same tasks as an earlier claim (as rl > noupdate does rl > base when the
// No-update control's evaluation is Base's): such a claim would only
// repeat another and count twice in the Holm adjustment. A claim on a
// group of tasks (rl > base on hard) is another test than one on all.
func (p Policy) sameEvaluations() error {
	runOf := map[string]string{}
	for _, r := range p.Subjects.Runs {
		runOf[strings.TrimSpace(r.Label)] = strings.TrimSpace(r.Run)
	}
	type pair struct {
		a, b string
		on   Group
	}
	seen := map[pair]Claim{}
	for _, c := range p.Claims {
		a, b := runOf[c.Better], runOf[c.Than]
		switch {
		case a == "" || b == "":
			continue
		case a == b:
			return fmt.Errorf("claims: %s compares evaluation %s with itself (runs name it for both labels). Try: --runs giving %s and %s an evaluation each", c, a, c.Better, c.Than)
		}
		k := pair{min(a, b), max(a, b), c.On}
		if earlier, ok := seen[k]; ok {
			return fmt.Errorf("claims: %s compares the same two evaluations as %s (%s and %s), so it would only repeat it. Try: evaluate each label's model in a run of its own, or drop one of the claims", c, earlier, k.a, k.b)
		}
		seen[k] = c
	}
	return nil
}

// LoadPolicy reads the policy file at path (ParsePolicy). A path that reads
// like a built-in policy's name is named ./PATH, so a file can never pass
// for the built-in policy.
func LoadPolicy(path string) (Policy, error) {
	raw, err := untrusted.ReadFile(path, untrusted.PolicyLimit)
	if err != nil {
		return Policy{}, fmt.Errorf("read policy: %w", err)
	}
	if reservedName(path) {
		path = "." + string(filepath.Separator) + path
	}
	p, err := ParsePolicy(path, raw)
	p.Source = raw
	return p, err
}

// policyFields are the fields of a policy file, in the order docs/GATE.md
// shows them.
var policyFields = []string{"name", "claims", "audits", "alpha", "resamples", "seed", "power", "options", "runs", "train", "reproduced"}

// ParsePolicy reads a YAML policy over the built-in one: absent fields keep
// paper-grade's values, absent options the audits' defaults. name is where
// the text came from: a file's path, which names the policy when the text
// does not, or a built-in policy's name, whose exact text (PaperGradeSource)
// is then required. A text naming itself after a built-in policy is
// refused, as are unknown fields, fields given twice, more than one YAML
// document, a text over MaxPolicySize, and whatever Check refuses; each
// error names name, the line and the field.
//
// The result depends on nothing but the arguments, and ParsePolicy(p.Name,
// raw) returns p again, so a verdict that stores raw can be re-derived.
func ParsePolicy(name string, raw []byte) (Policy, error) {
	p, err := parsePolicy(name, raw)
	if err != nil {
		return Policy{}, fmt.Errorf("policy %s", err)
	}
	return p, nil
}

// parsePolicy is ParsePolicy, its errors starting with the source name.
func parsePolicy(name string, raw []byte) (Policy, error) {
	at := func(n *yaml.Node, format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", name, n.Line, fmt.Sprintf(format, args...))
	}
	src, builtin := builtinPolicies[name]
	switch {
	case builtin && !bytes.Equal(raw, src()):
		return Policy{}, fmt.Errorf("%s: not the built-in policy's text; Try: give a policy file of another name", name)
	case !builtin && reservedName(name):
		return Policy{}, fmt.Errorf("%s: the name is reserved for the built-in policy; Try: name the file otherwise", name)
	case len(raw) > MaxPolicySize:
		return Policy{}, fmt.Errorf("%s: %d bytes, over the %d a policy may have", name, len(raw), MaxPolicySize)
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	var doc, more yaml.Node
	if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
		return Policy{}, fmt.Errorf("%s: empty; want a YAML mapping of %s (docs/GATE.md)", name, strings.Join(policyFields, ", "))
	} else if err != nil {
		return Policy{}, fmt.Errorf("%s: %w", name, err)
	}
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return Policy{}, fmt.Errorf("%s: more than one YAML document; want one mapping", name)
	}
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		return Policy{}, at(top, "want a YAML mapping of %s (docs/GATE.md)", strings.Join(policyFields, ", "))
	}
	p := PaperGrade()
	p.Name = name
	lines := map[string]*yaml.Node{} // each field and option given, at its key
	for k, v := range pairs(top) {
		if k.Kind != yaml.ScalarNode || !slices.Contains(policyFields, k.Value) {
			return Policy{}, at(k, "unknown field %q: want one of %s", k.Value, strings.Join(policyFields, ", "))
		}
		if lines[k.Value] != nil {
			return Policy{}, at(k, "%s given twice (also line %d)", k.Value, lines[k.Value].Line)
		}
		lines[k.Value] = k
		var err error
		switch k.Value {
		case "name":
			if v.Kind != yaml.ScalarNode {
				return Policy{}, at(v, "name: want a string")
			}
			if err := checkPolicyName(v.Value, builtin); err != nil {
				return Policy{}, at(v, "%v", err)
			}
			p.Name = v.Value
		case "claims":
			p.Claims = nil
			err = eachScalar(v, "claims", at, func(n *yaml.Node) error {
				c, err := ParseClaim(n.Value)
				if err != nil {
					return at(n, "claims: %v", err)
				}
				p.Claims = append(p.Claims, c)
				return nil
			})
		case "audits":
			p.Audits = nil
			err = eachScalar(v, "audits", at, func(n *yaml.Node) error {
				p.Audits = append(p.Audits, n.Value)
				return nil
			})
		case "options":
			if v.Kind != yaml.MappingNode {
				return Policy{}, at(v, "options: want a mapping of %s", strings.Join(optionKeys(), ", "))
			}
			for ok, ov := range pairs(v) {
				i := slices.IndexFunc(settings, func(s setting) bool { return s.option && s.key == ok.Value })
				if ok.Kind != yaml.ScalarNode || i < 0 {
					return Policy{}, at(ok, "options: unknown option %q: want one of %s", ok.Value, strings.Join(optionKeys(), ", "))
				}
				if lines[ok.Value] != nil {
					return Policy{}, at(ok, "options: %s given twice (also line %d)", ok.Value, lines[ok.Value].Line)
				}
				lines[ok.Value] = ok
				if err := decodeSetting(settings[i], &p, ov); err != nil {
					return Policy{}, at(ov, "%v", err)
				}
				// A zero would silently take the default: refuse it here,
				// where the file's own value is still known.
				if err := settings[i].checkValue(&p); err != nil {
					return Policy{}, at(ov, "%v", err)
				}
			}
		case "runs":
			p.Subjects.Runs, err = labeledNode(v, "runs", at)
		case "train":
			p.Subjects.Train, err = labeledNode(v, "train", at)
		case "reproduced":
			err = eachScalar(v, "reproduced", at, func(n *yaml.Node) error {
				p.Reproduced = append(p.Reproduced, n.Value)
				return nil
			})
		default:
			i := slices.IndexFunc(settings, func(s setting) bool { return !s.option && s.key == k.Value })
			err = decodeSetting(settings[i], &p, v)
			if err != nil {
				err = at(v, "%v", err)
			}
		}
		if err != nil {
			return Policy{}, err
		}
	}
	if err := p.Check(); err != nil {
		var fe *fieldError
		if errors.As(err, &fe) && lines[fe.key] != nil {
			return Policy{}, at(lines[fe.key], "%v", err)
		}
		return Policy{}, fmt.Errorf("%s: %w", name, err)
	}
	return p, nil
}

// checkPolicyName refuses a name a reader could mistake for another
// policy's, or which would garble a table or a report line.
func checkPolicyName(s string, builtin bool) error {
	switch {
	case s == "" || strings.TrimSpace(s) != s || len(s) > maxPolicyName || strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }):
		return fmt.Errorf("name %q: want printable text of 1 to %d characters without spaces at either end, or no name: field (the file's path names the policy)", s, maxPolicyName)
	case !builtin && reservedName(s):
		return fmt.Errorf("name %q is the built-in policy's; Try: pick another name, e.g. name: my-%s", s, strings.ToLower(s))
	}
	return nil
}

// decodeSetting reads the YAML scalar n into s's field of p.
func decodeSetting(s setting, p *Policy, n *yaml.Node) error {
	want, tags := s.kind(p)
	if n.Kind != yaml.ScalarNode || !slices.Contains(tags, n.ShortTag()) || n.Decode(s.ptr(p)) != nil {
		return fmt.Errorf("%s: want %s", s.key, want)
	}
	return nil
}

// optionKeys lists the options a policy may set.
func optionKeys() []string {
	var keys []string
	for _, s := range settings {
		if s.option {
			keys = append(keys, s.key)
		}
	}
	return keys
}

// pairs yields the keys and values of a YAML mapping.
func pairs(m *yaml.Node) func(yield func(k, v *yaml.Node) bool) {
	return func(yield func(k, v *yaml.Node) bool) {
		for i := 0; i+1 < len(m.Content); i += 2 {
			if !yield(m.Content[i], m.Content[i+1]) {
				return
			}
		}
	}
}

// eachScalar calls fn on each item of the YAML sequence n of strings.
func eachScalar(n *yaml.Node, key string, at func(*yaml.Node, string, ...any) error, fn func(*yaml.Node) error) error {
	if n.Kind != yaml.SequenceNode {
		return at(n, "%s: want a list", key)
	}
	for _, item := range n.Content {
		if item.Kind != yaml.ScalarNode {
			return at(item, "%s: want a list of strings", key)
		}
		if err := fn(item); err != nil {
			return err
		}
	}
	return nil
}

// labeledNode reads a YAML mapping LABEL: RUN in file order.
func labeledNode(n *yaml.Node, key string, at func(*yaml.Node, string, ...any) error) ([]LabeledRun, error) {
	if n.Kind != yaml.MappingNode {
		return nil, at(n, "%s: want a mapping LABEL: RUN", key)
	}
	var out []LabeledRun
	for k, v := range pairs(n) {
		if k.Kind != yaml.ScalarNode || v.Kind != yaml.ScalarNode {
			return nil, at(k, "%s: want a mapping LABEL: RUN", key)
		}
		var err error
		if out, err = AddLabeledRun(out, k.Value, v.Value); err != nil {
			return nil, at(k, "%s: %v", key, err)
		}
	}
	return out, nil
}

// PolicyRef resolves a policy as a pipeline stage names it: a built-in
// policy's name is that policy, anything else a policy file, relative to
// dir unless absolute.
func PolicyRef(ref, dir string) (Policy, error) {
	if src, ok := builtinPolicies[ref]; ok {
		return ParsePolicy(ref, src())
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

// Held says in one line what the policy holds: its claims, its audits,
// the stages it requires reproduced and its significance level, e.g.
// "claims rl > base, sft > base; audits gold, budget; α 0.05".
func (p Policy) Held() string {
	claims := make([]string, len(p.Claims))
	for i, c := range p.Claims {
		claims[i] = c.String()
	}
	reproduced := ""
	if len(p.Reproduced) > 0 {
		reproduced = "; reproduced " + strings.Join(p.Reproduced, ", ")
	}
	return fmt.Sprintf("claims %s; audits %s%s; α %g", strings.Join(claims, ", "), strings.Join(p.Audits, ", "), reproduced, p.Alpha)
}

// Differences says how p differs from the built-in policy in what it
// requires, one short phrase each ("drops claim sft > base", "alpha 0.01
// instead of 0.05", "options: near_duplicate 0.8 (default 0.9)"); none
// when it requires the same. The name and the subjects are not compared,
// nor the order of claims and audits, which decides nothing.
func (p Policy) Differences() []string {
	base := PaperGrade()
	var out []string
	claim := func(c Claim) string { return c.String() }
	out = append(out, setDifference("claim", base.Claims, p.Claims, claim)...)
	out = append(out, setDifference("audit", base.Audits, p.Audits, func(a string) string { return a })...)
	out = append(out, setDifference("reproduced stage", base.Reproduced, p.Reproduced, func(s string) string { return s })...)
	d, bd := p.withDefaults(), base.withDefaults()
	for _, s := range settings {
		got, want := s.value(&d), s.value(&bd)
		switch {
		case got == want:
		case s.option:
			out = append(out, fmt.Sprintf("options: %s %s (default %s)", s.key, show(got), show(want)))
		default:
			out = append(out, fmt.Sprintf("%s %s instead of %s", s.key, show(got), show(want)))
		}
	}
	return out
}

// setDifference says which items of base got drops and which it adds:
// "drops claims rl > noupdate, sft > base", "adds audit weights".
func setDifference[T comparable](what string, base, got []T, name func(T) string) []string {
	var out []string
	for _, d := range []struct {
		verb     string
		from, in []T
	}{{"drops", base, got}, {"adds", got, base}} {
		var items []string
		for _, x := range d.from {
			if !slices.Contains(d.in, x) {
				items = append(items, name(x))
			}
		}
		switch len(items) {
		case 0:
		case 1:
			out = append(out, fmt.Sprintf("%s %s %s", d.verb, what, items[0]))
		default:
			out = append(out, fmt.Sprintf("%s %ss %s", d.verb, what, strings.Join(items, ", ")))
		}
	}
	return out
}

// Digest is the BLAKE3 digest of the policy's canonical JSON without its
// subjects (subjects {}), name included: what was required, apart from
// which runs it was required of, so verdicts under one policy share it.
func (p Policy) Digest() (ledger.Digest, error) {
	p.Subjects = Subjects{}
	return digestJSON(p)
}

// Digest is the BLAKE3 digest of the subjects' canonical JSON: the runs a
// verdict judged, recorded apart from the policy's digest.
func (s Subjects) Digest() (ledger.Digest, error) { return digestJSON(s) }

func digestJSON(v any) (ledger.Digest, error) {
	b, err := ledger.CanonicalJSON(v)
	if err != nil {
		return ledger.Digest{}, err
	}
	return ledger.Sum(b), nil
}
