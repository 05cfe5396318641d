package audit

import (
	"encoding/xml"
	"fmt"
	"io"
	"slices"
	"strings"
)

// junitSuite and junitCase are the JUnit XML that CI systems (GitHub
// Actions reporters, GitLab's junit artifacts, Jenkins) read: one test
// case per check, a failure element for each that failed.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the verdict's checks as JUnit XML, one test case per
// check, its message and evidence seqs in the failure or the case's output.
// CI reporters key a case by class and name and collapse repeats, while an
// audit's check runs once per model: so a check whose message starts with
// a model's label ("rl: ...") is named with it ("audit gold:
// no-gold-in-prompts (rl)", class rlgate.gate.audit.gold.rl), and a name
// still repeated (one finding per leaked task) is numbered (#2, #3...).
// Claims are of class rlgate.gate.claim.
func (v *Verdict) WriteJUnit(w io.Writer) error {
	labels := []string{LabelBase, LabelSFT, LabelRL, LabelNoUpdate}
	for _, r := range slices.Concat(v.Policy.Subjects.Runs, v.Policy.Subjects.Train) {
		labels = append(labels, r.Label)
	}
	s := junitSuite{Name: "rlgate gate " + v.Policy.Name, Tests: len(v.Checks), Failures: v.Failed}
	seen := map[[2]string]int{}
	for _, c := range v.Checks {
		class, name := "rlgate.gate.claim", c.Name
		if rest, ok := strings.CutPrefix(c.Name, "audit "); ok {
			audit, _, _ := strings.Cut(rest, ":")
			class = "rlgate.gate.audit." + audit
			if label, _, ok := strings.Cut(c.Message, ": "); ok && slices.Contains(labels, label) {
				class += "." + label
				name += " (" + label + ")"
			}
		}
		key := [2]string{class, name}
		if seen[key]++; seen[key] > 1 {
			name += fmt.Sprintf(" #%d", seen[key])
		}
		text := c.Message
		if len(c.Seqs) > 0 {
			text += fmt.Sprintf("\nevidence: ledger entries %v (rlgate show SEQ)", c.Seqs)
		}
		jc := junitCase{Name: name, Classname: class}
		if c.OK {
			jc.SystemOut = text
		} else {
			jc.Failure = &junitFailure{Message: c.Message, Text: text}
		}
		s.Cases = append(s.Cases, jc)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(junitSuites{Name: "rlgate", Tests: s.Tests, Failures: s.Failures, Suites: []junitSuite{s}}); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
