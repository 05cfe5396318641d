package audit

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rlgate/rlgate/lab/demo"
)

// subjects is a policy file's runs: and train: for the tests below.
const subjects = "runs: {base: ev-base, rl: ev-rl}\ntrain: {rl: train-rl}\n"

// TestParsePolicyRefuses: each policy that says nothing, more than it can
// hold, or that it is another policy is refused in one line naming the
// file, the line of the field and what is allowed.
func TestParsePolicyRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       string // the error after "policy p.yaml"
	}{
		// A file passing for the built-in policy (issue 21, case 3).
		{"impersonation", "name: paper-grade\nclaims: []\naudits: [budget]\n", `:1: name "paper-grade" is the built-in policy's; Try: pick another name, e.g. name: my-paper-grade`},
		{"impersonation in capitals", "name: Paper-Grade\n", `:1: name "Paper-Grade" is the built-in policy's; Try: pick another name, e.g. name: my-paper-grade`},
		{"name padded with spaces", "name: \" paper-grade\"\n", `:1: name " paper-grade": want printable text of 1 to 128 characters without spaces at either end, or no name: field (the file's path names the policy)`},
		{"name with an escape", "name: \"a\\e[2Jb\"\n", `:1: name "a\x1b[2Jb": want printable text`},
		{"empty name", "name: \"\"\n", `:1: name "": want printable text`},

		{"no claims", "claims: []\naudits: [budget]\n", `:1: claims: none; a policy must claim something, e.g. claims: ["rl > base"]`},
		{"no audits", "audits: []\n", `:1: audits: none; a policy must run at least one audit (gold, split, budget, reward, training, identity)`},
		{"audit twice", "claims: [\"rl > base\"]\naudits: [gold, budget, gold]\n", ":2: audits: gold given twice"},
		{"unknown audit", "audits: [weights]\n", `:1: audits: "weights": want one of gold, split, budget, reward, training, identity`},
		{"claim twice", "claims: [\"rl > base\", \"sft > base\", \"rl>base\"]\n", ":1: claims: rl > base given twice"},
		{"claim label with markup", "claims: [\"rl > base<b>\"]\n", `:1: claims: claim "rl > base<b>": want LABEL > LABEL, two different plain labels, e.g. rl > base`},
		{"claim label with a space", "claims: [\"r l > base\"]\n", `:1: claims: claim "r l > base": want LABEL > LABEL`},
		{"claim of a label over itself", "claims: [\"rl > rl\"]\n", `:1: claims: claim "rl > rl": want LABEL > LABEL`},
		{"claim as a mapping", "claims: {rl: base}\n", ":1: claims: want a list"},

		{"label twice in runs", "runs:\n  rl: ev-rl\n  base: ev-base\n  rl: ev-rl2\n", `:4: runs: label "rl" given twice`},
		{"label twice once trimmed", "runs:\n  rl: ev-rl\n  \"rl \": ev-rl2\n", `:3: runs: label "rl" given twice`},
		{"label twice in train", "train:\n  rl: a\n  rl: b\n", `:3: train: label "rl" given twice`},
		{"label not plain", "runs:\n  \"r>l\": ev-rl\n", `:2: runs: label "r>l": want a plain identifier (a letter, then letters, digits, _ or -; at most 64)`},
		{"empty label", "runs:\n  \" \": ev-rl\n", `:2: runs: label "": want a plain identifier`},
		{"empty run id", "runs:\n  rl: \" \"\n", `:2: runs: label "rl": no run id`},
		{"runs as a list", "runs: [ev-rl]\n", ":1: runs: want a mapping LABEL: RUN"},
		{"reproduced stage twice", "reproduced: [rl2, eval_rl, rl2]\n", ":1: reproduced: rl2 given twice"},
		{"reproduced stage empty", "reproduced: [\"\"]\n", `:1: reproduced: "": want a stage's name`},
		{"reproduced as a mapping", "reproduced: {rl2: yes}\n", ":1: reproduced: want a list"},

		{"alpha near 1", "alpha: 0.999999\n", ":1: alpha 0.999999: want 0 < alpha ≤ 0.1"},
		{"alpha 0", "alpha: 0\n", ":1: alpha 0: want 0 < alpha ≤ 0.1"},
		{"alpha negative", "alpha: -0.05\n", ":1: alpha -0.05: want 0 < alpha ≤ 0.1"},
		{"alpha not a number", "alpha: .nan\n", ":1: alpha NaN: want 0 < alpha ≤ 0.1"},
		{"alpha as text", "alpha: low\n", ":1: alpha: want a number"},
		{"resamples too few", "resamples: 999\n", ":1: resamples 999: want 1,000 ≤ resamples ≤ 1,000,000"},
		{"resamples too many", "resamples: 1000001\n", ":1: resamples 1000001: want 1,000 ≤ resamples ≤ 1,000,000"},
		{"resamples fractional", "resamples: 1500.5\n", ":1: resamples: want a whole number"},
		{"power too low", "power: 0.4\n", ":1: power 0.4: want 0.5 ≤ power < 1"},
		{"power 1", "power: 1\n", ":1: power 1: want 0.5 ≤ power < 1"},
		{"seed negative", "seed: -1\n", ":1: seed: want a whole number"},
		{"seed beyond JSON", "seed: 9007199254740993\n", ":1: seed 9007199254740993: want 0 ≤ seed ≤ 2^53"},

		{"max_kl_growth negative", "options: {max_kl_growth: -1}\n", ":1: max_kl_growth -1: want 1 ≤ max_kl_growth ≤ 100"},
		{"max_kl_growth 0", "options:\n  max_kl_growth: 0\n", ":2: max_kl_growth 0: want 1 ≤ max_kl_growth ≤ 100"},
		{"max_kl_growth huge", "options: {max_kl_growth: 1e300}\n", ":1: max_kl_growth 1e+300: want 1 ≤ max_kl_growth ≤ 100"},
		{"kl_floor 0", "options: {kl_floor: 0}\n", ":1: kl_floor 0: want 0 < kl_floor ≤ 0.01"},
		{"kl_floor large", "options: {kl_floor: 5}\n", ":1: kl_floor 5: want 0 < kl_floor ≤ 0.01"},
		{"self_grade_sample 1", "options: {self_grade_sample: 1}\n", ":1: self_grade_sample 1: want 20 ≤ self_grade_sample ≤ 100,000"},
		{"self_grade_sample negative", "options: {self_grade_sample: -200}\n", ":1: self_grade_sample -200: want 20 ≤ self_grade_sample ≤ 100,000"},
		{"self_grade_min 0", "options: {self_grade_min: 0}\n", ":1: self_grade_min 0: want 0.9 ≤ self_grade_min ≤ 1"},
		{"self_grade_min over 1", "options: {self_grade_min: 1.5}\n", ":1: self_grade_min 1.5: want 0.9 ≤ self_grade_min ≤ 1"},
		{"gold_substring 0", "options: {gold_substring: 0}\n", ":1: gold_substring 0: want 16 ≤ gold_substring ≤ 200"},
		{"gold_substring huge", "options: {gold_substring: 100000}\n", ":1: gold_substring 100000: want 16 ≤ gold_substring ≤ 200"},
		{"near_duplicate over 1", "options: {near_duplicate: 2}\n", ":1: near_duplicate 2: want 0.5 ≤ near_duplicate ≤ 1"},
		{"near_duplicate negative", "options: {near_duplicate: -0.9}\n", ":1: near_duplicate -0.9: want 0.5 ≤ near_duplicate ≤ 1"},
		{"mutate negative", "options: {mutate: -5}\n", ":1: mutate -5: want 0 ≤ mutate ≤ 10,000"},
		{"mutate huge", "options: {mutate: 1000000}\n", ":1: mutate 1000000: want 0 ≤ mutate ≤ 10,000"},
		{"split_by_database as text", "options: {split_by_database: maybe}\n", ":1: split_by_database: want true or false"},
		{"endpoint with a password", "options: {mutate: 5, mutate_endpoint: \"http://u:secret@host:8000\"}\n", ":1: mutate_endpoint http://u:secret@host:8000: want an http:// or https:// URL with a host and no user or password"},
		{"endpoint of another scheme", "options: {mutate: 5, mutate_endpoint: \"file:///etc/passwd\"}\n", ":1: mutate_endpoint file:///etc/passwd: want an http:// or https:// URL"},
		{"endpoint without mutate", "options: {mutate_endpoint: \"http://localhost:8000\"}\n", ":1: mutate_endpoint is set but mutate is 0, so nothing is re-played; Try: mutate: 20, or drop mutate_endpoint"},
		{"unknown option", "options: {threshold: 0.5}\n", `:1: options: unknown option "threshold": want one of max_kl_growth, kl_floor, self_grade_sample, self_grade_min, gold_substring, near_duplicate, split_by_database, mutate, mutate_endpoint`},
		{"option twice", "options:\n  mutate: 5\n  mutate: 0\n", ":3: options: mutate given twice (also line 2)"},

		{"unknown field", "claims: [\"rl > base\"]\nthreshold: 1\n", `:2: unknown field "threshold": want one of name, claims, audits, alpha, resamples, seed, power, options, runs, train`},
		{"field twice", "alpha: 0.05\nclaims: [\"rl > base\"]\nalpha: 0.9\n", ":3: alpha given twice (also line 1)"},
		{"two documents", "claims: [\"rl > base\"]\n---\nclaims: []\n", ": more than one YAML document; want one mapping"},
		{"empty", "", ": empty; want a YAML mapping of name, claims, audits, alpha, resamples, seed, power, options, runs, train, reproduced (docs/GATE.md)"},
		{"not a mapping", "- rl > base\n", ":1: want a YAML mapping of name"},
		{"too long", "# " + strings.Repeat("x", MaxPolicySize) + "\nalpha: 0.05\n", fmt.Sprintf(": %d bytes, over the 65536 a policy may have", MaxPolicySize+15)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParsePolicy("p.yaml", []byte(tc.text))
			if err == nil {
				t.Fatalf("accepted: %s", p.Held())
			}
			if got := err.Error(); !strings.HasPrefix(got, "policy p.yaml"+tc.want) || strings.Contains(got, "\n") {
				t.Errorf("error\n%s\nwant one line starting\npolicy p.yaml%s", got, tc.want)
			}
		})
	}
}

// TestParsePolicyReads: what a policy file gives, trimmed, over the
// built-in values; and ParsePolicy(p.Name, text) gives p back, as a
// verdict that stores the text re-derives it.
func TestParsePolicyReads(t *testing.T) {
	custom := PaperGrade()
	custom.Name = "bird-rl"
	custom.Claims = []Claim{{Better: "rl", Than: "base"}, {Better: "rl", Than: "noupdate"}}
	custom.Audits = []string{AuditGold, AuditBudget}
	custom.Alpha, custom.Resamples, custom.Seed, custom.Power = 0.01, 2000, 0, 0.9
	custom.Options = Options{MaxKLGrowth: 4, KLFloor: 0.002, SelfGradeSample: 40, SelfGradeMin: 1, GoldSubstring: 30, NearDuplicate: 0.8, SplitByDatabase: true, Mutate: 20, MutateEndpoint: "http://127.0.0.1:8000/v1"}
	custom.Subjects = Subjects{Runs: []LabeledRun{{"base", "ev base"}, {"rl", "ev-rl"}}, Train: []LabeledRun{{"rl", "train-rl"}}}
	unnamed := PaperGrade()
	unnamed.Name = "p.yaml"
	for _, tc := range []struct {
		name, text string
		want       Policy
	}{
		{"every field, spaces around labels and runs", `name: bird-rl
claims: [" rl > base", "rl>noupdate "]
audits: [gold, budget]
alpha: 0.01
resamples: 2000
seed: 0
power: 0.9
options:
  max_kl_growth: 4
  kl_floor: 0.002
  self_grade_sample: 40
  self_grade_min: 1
  gold_substring: 30
  near_duplicate: 0.8
  split_by_database: true
  mutate: 20
  mutate_endpoint: http://127.0.0.1:8000/v1
runs:
  " base ": " ev base "
  rl: ev-rl
train:
  rl: train-rl
`, custom},
		{"no name: the path names it", "# nothing but a comment\n{}\n", unnamed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParsePolicy("p.yaml", []byte(tc.text))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, p); d != "" {
				t.Errorf("policy (-want +got):\n%s", d)
			}
			again, err := ParsePolicy(p.Name, []byte(tc.text))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(p, again); d != "" {
				t.Errorf("ParsePolicy(p.Name, text) (-first +again):\n%s", d)
			}
		})
	}
}

// TestPaperGradeSource: the built-in policy has a text, which ParsePolicy
// under the built-in name turns into exactly PaperGrade(); under that name
// no other text is accepted, and no file path becomes that name.
func TestPaperGradeSource(t *testing.T) {
	p, err := ParsePolicy(PaperGradeName, PaperGradeSource())
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(PaperGrade(), p); d != "" {
		t.Errorf("ParsePolicy(PaperGradeSource()) (-PaperGrade() +got):\n%s", d)
	}
	if p, err := PolicyRef(PaperGradeName, t.TempDir()); err != nil || p.Name != PaperGradeName {
		t.Errorf("PolicyRef(paper-grade): %q, %v", p.Name, err)
	}
	weaker := strings.Replace(string(PaperGradeSource()), "alpha: 0.05", "alpha: 0.1", 1)
	for _, name := range []string{PaperGradeName, "PAPER-GRADE", " paper-grade"} {
		if _, err := ParsePolicy(name, []byte(weaker)); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q with another text: %v, want one line refusing it", name, err)
		}
	}
	if _, err := ParsePolicy(PaperGradeName, []byte("claims: [\"rl > base\"]\n")); err == nil {
		t.Error("a text without a name, under the built-in name, was taken for the built-in policy")
	}

	// A policy file whose path is a built-in name is named ./PATH; one
	// whose text names itself so is refused, naming the file.
	t.Chdir(t.TempDir())
	if err := os.WriteFile(PaperGradeName, []byte("claims: [\"rl > base\"]\naudits: [budget]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err = LoadPolicy(PaperGradeName)
	if want := "." + string(filepath.Separator) + PaperGradeName; err != nil || p.Name != want {
		t.Errorf("file %s: name %q, %v; want %q", PaperGradeName, p.Name, err, want)
	}
	if err := os.WriteFile("mine.yaml", []byte("name: paper-grade\nclaims: [\"rl > base\"]\naudits: [budget]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadPolicy("mine.yaml"); err == nil || !strings.HasPrefix(err.Error(), "policy mine.yaml:1: ") {
		t.Errorf("mine.yaml naming itself paper-grade: %v", err)
	}
}

// TestShippedPolicies: the policies rlgate ships (examples, the demo's
// gate.yaml) load, and say how they differ from paper-grade.
func TestShippedPolicies(t *testing.T) {
	files, err := demo.Files(demo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	texts := map[string][]byte{"demo " + demo.PolicyFile: files[demo.PolicyFile]}
	for _, f := range []string{"../examples/ci/policy.yaml", "../examples/verl/gate.yaml", "../examples/skyrl/gate.yaml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		texts[f] = b
	}
	for name, text := range texts {
		p, err := ParsePolicy(name, text)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		// The pipelines run RL after SFT: their gates claim rl > sft.
		want := []string{"drops claim rl > base", "adds claim rl > sft", "options: split_by_database true (default false)"}
		if strings.Contains(name, "ci") {
			want = nil
		}
		if d := cmp.Diff(want, p.Differences()); d != "" {
			t.Errorf("%s: differences (-want +got):\n%s", name, d)
		}
	}
}

// TestPolicyHeldDifferences: one line of what a policy holds, and for a
// custom one each way it departs from paper-grade.
func TestPolicyHeldDifferences(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		held       string
		diffs      []string
	}{
		{"paper-grade itself", string(PaperGradeSource()),
			"claims rl > base, rl > noupdate, sft > base; audits gold, split, budget, reward, training, identity; α 0.05", nil},
		{"same requirements, other order, other name, runs, explicit defaults",
			"name: mine\nclaims: [\"sft > base\", \"rl > base\", \"rl > noupdate\"]\naudits: [identity, training, reward, budget, split, gold]\noptions: {near_duplicate: 0.9, mutate: 0}\n" + subjects,
			"claims sft > base, rl > base, rl > noupdate; audits identity, training, reward, budget, split, gold; α 0.05", nil},
		{"weaker", "claims: [\"rl > base\", \"sft > noupdate\"]\naudits: [gold, reward, training, identity]\nalpha: 0.01\nresamples: 2000\nseed: 7\noptions: {near_duplicate: 0.8}\n" + subjects,
			"claims rl > base, sft > noupdate; audits gold, reward, training, identity; α 0.01",
			[]string{"drops claims rl > noupdate, sft > base", "adds claim sft > noupdate", "drops audits split, budget", "alpha 0.01 instead of 0.05",
				"resamples 2000 instead of 10000", "seed 7 instead of 1", "options: near_duplicate 0.8 (default 0.9)"}},
		{"one audit, power, a re-play", "claims: [\"rl > base\"]\naudits: [budget]\npower: 0.9\noptions: {mutate: 20, mutate_endpoint: \"https://models.example/v1\"}\n",
			"claims rl > base; audits budget; α 0.05",
			[]string{"drops claims rl > noupdate, sft > base", "drops audits gold, split, reward, training, identity", "power 0.9 instead of 0.8",
				"options: mutate 20 (default 0)", "options: mutate_endpoint https://models.example/v1 (default none)"}},
		{"reproduction required", "reproduced: [rl2, eval_rl]\n",
			"claims rl > base, rl > noupdate, sft > base; audits gold, split, budget, reward, training, identity; reproduced rl2, eval_rl; α 0.05",
			[]string{"adds reproduced stages rl2, eval_rl"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "p.yaml"
			if tc.text == string(PaperGradeSource()) {
				src = PaperGradeName
			}
			p, err := ParsePolicy(src, []byte(tc.text))
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Held(); got != tc.held {
				t.Errorf("Held:\n%s\nwant\n%s", got, tc.held)
			}
			if d := cmp.Diff(tc.diffs, p.Differences()); d != "" {
				t.Errorf("Differences (-want +got):\n%s", d)
			}
		})
	}
}

// TestPolicyDigest: the policy's digest ignores the runs it is applied to
// and changes with anything it requires (the name included); the
// subjects' digest is the other half.
func TestPolicyDigest(t *testing.T) {
	digests := func(text string) (string, string) {
		t.Helper()
		p, err := ParsePolicy("p.yaml", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		pd, err := p.Digest()
		if err != nil {
			t.Fatal(err)
		}
		sd, err := p.Subjects.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return pd.String(), sd.String()
	}
	const policy = "name: mine\nclaims: [\"rl > base\"]\naudits: [budget]\n"
	pd, sd := digests(policy)
	otherPD, otherSD := digests(policy + "runs: {base: ev-base2, rl: ev-rl2}\ntrain: {rl: train-rl2}\n")
	if otherPD != pd {
		t.Errorf("policy digest changed with the runs: %s, then %s", pd, otherPD)
	}
	if otherSD == sd {
		t.Errorf("subjects digest %s did not change with the runs", sd)
	}
	for _, change := range []string{
		strings.Replace(policy, "mine", "yours", 1),
		policy + "alpha: 0.01\n",
		policy + "options: {split_by_database: true}\n",
		strings.Replace(policy, "budget", "gold", 1),
	} {
		if got, _ := digests(change); got == pd {
			t.Errorf("policy digest %s unchanged by\n%s", pd, change)
		}
	}
	if _, err := PaperGrade().Digest(); err != nil {
		t.Error(err)
	}
}

// TestEveryOptionHasARange: a field added to Options is refused by the
// policy parser until it is given a range here.
func TestEveryOptionHasARange(t *testing.T) {
	typ := reflect.TypeFor[Options]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		key := f.Tag.Get("yaml")
		if err := CheckOption(key, reflect.Zero(f.Type).Interface()); err != nil && !strings.HasPrefix(err.Error(), "want ") {
			t.Errorf("Options.%s: %v", f.Name, err)
		}
	}
	if err := CheckOption("threshold", 0.5); err == nil {
		t.Error("an unknown option was accepted")
	}
}

// TestPolicyCheck: a policy put together in code (flags over a file) is
// held to what a file is.
func TestPolicyCheck(t *testing.T) {
	if err := PaperGrade().Check(); err != nil {
		t.Fatalf("paper-grade: %v", err)
	}
	for _, tc := range []struct {
		name   string
		change func(*Policy)
		want   string
	}{
		{"no name", func(p *Policy) { p.Name = "" }, "no name; Try: name: MY-POLICY"},
		{"no claims", func(p *Policy) { p.Claims = nil }, `claims: none; a policy must claim something, e.g. claims: ["rl > base"]`},
		{"label not plain in a claim", func(p *Policy) { p.Claims = []Claim{{Better: "rl", Than: "base "}} }, `claims: claim "rl > base ": want LABEL > LABEL`},
		{"label twice in runs", func(p *Policy) { p.Subjects.Runs = []LabeledRun{{"rl", "a"}, {"rl", "b"}} }, `runs: label "rl" given twice`},
		{"empty run id in train", func(p *Policy) { p.Subjects.Train = []LabeledRun{{"rl", ""}} }, `train: label "rl": no run id`},
		{"option out of range", func(p *Policy) { p.Options.NearDuplicate = 5 }, "near_duplicate 5: want 0.5 ≤ near_duplicate ≤ 1"},
		{"alpha 0", func(p *Policy) { p.Alpha = 0 }, "alpha 0: want 0 < alpha ≤ 0.1"},
	} {
		p := PaperGrade()
		tc.change(&p)
		if err := p.Check(); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
		}
	}
}
