package audit

import (
	"encoding/xml"
	"fmt"
	"io"
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
// check (class rlgate.gate.audit.NAME or rlgate.gate.claim), its message and
// evidence seqs in the failure or the case's output.
func (v *Verdict) WriteJUnit(w io.Writer) error {
	s := junitSuite{Name: "rlgate gate " + v.Policy.Name, Tests: len(v.Checks), Failures: v.Failed}
	for _, c := range v.Checks {
		class := "rlgate.gate.claim"
		if rest, ok := strings.CutPrefix(c.Name, "audit "); ok {
			name, _, _ := strings.Cut(rest, ":")
			class = "rlgate.gate.audit." + name
		}
		text := c.Message
		if len(c.Seqs) > 0 {
			text += fmt.Sprintf("\nevidence: ledger entries %v (rlgate show SEQ)", c.Seqs)
		}
		jc := junitCase{Name: c.Name, Classname: class}
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
