package records_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/audit"
	"github.com/rlgate/rlgate/ledger"
	"github.com/rlgate/rlgate/ledger/records"
	"github.com/rlgate/rlgate/publish"
	"github.com/rlgate/rlgate/stages/rollout"
	"github.com/rlgate/rlgate/stages/runner"
	// The reproduce entry's body type registers from the workflow that writes it.
	_ "github.com/rlgate/rlgate/workflow/reproduce"
)

// repoRoot is the repository, seen from this package's directory.
const repoRoot = "../.."

// TestEveryVersionHasAType: the packages that own the body types register
// one for every version of every kind, so Decode never meets a declared
// version it cannot check. (This test links them all, as rlgate does.)
func TestEveryVersionHasAType(t *testing.T) {
	for _, k := range records.Kinds() {
		for _, v := range records.Versions(k) {
			if _, ok := records.Type(k, v); !ok {
				t.Errorf("%s version %d has no registered body type", k, v)
			}
		}
	}
}

// docKinds returns the kinds in the first column of the table under
// heading in doc whose header row starts with "| kind |".
func docKinds(t *testing.T, doc, heading string) []string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(repoRoot, doc))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(src), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s has no section %q", doc, heading)
	}
	_, table, ok := strings.Cut(sec, "\n| kind |")
	if !ok {
		t.Fatalf("%s, %s: no table of kinds", doc, heading)
	}
	kind := regexp.MustCompile("^`([^`]+)`$")
	var kinds []string
	for _, line := range strings.Split(table, "\n")[2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		first := strings.TrimSpace(strings.Split(line, "|")[1])
		if first == "any" { // FORMAT.md's row for what every entry derives
			continue
		}
		for _, cell := range strings.Split(first, ",") {
			m := kind.FindStringSubmatch(strings.TrimSpace(cell))
			if m == nil {
				t.Errorf("%s: %q is not a kind in backticks", doc, cell)
				continue
			}
			kinds = append(kinds, m[1])
		}
	}
	slices.Sort(kinds)
	return kinds
}

// TestDocumentsListEveryKind: docs/FORMAT.md's table of kinds and
// docs/ARCHITECTURE.md's name exactly the kinds records declares.
func TestDocumentsListEveryKind(t *testing.T) {
	want := records.Kinds()
	for _, d := range []struct{ doc, heading string }{
		{"docs/FORMAT.md", "## Schema version 1"},
		{"docs/ARCHITECTURE.md", "## Entry kinds"},
	} {
		if got := docKinds(t, d.doc, d.heading); !slices.Equal(got, want) {
			t.Errorf("%s lists the kinds\n%v\nbut records declares\n%v", d.doc, got, want)
		}
	}
}

// stageStart is a stage's own run.start: the ledger's fields and more.
type stageStart struct {
	ledger.RunStart
	Argv []string `json:"argv"`
}

func TestDecode(t *testing.T) {
	s, err := records.Decode[stageStart](records.KindRunStart, []byte(`{"argv":["x"],"stage":"sft"}`))
	if err != nil || s.Stage != "sft" || len(s.Argv) != 1 {
		t.Fatalf("decode a stage's run.start: %+v, %v", s, err)
	}
	v, err := records.Decode[audit.Verdict](records.KindVerdict, []byte(`{"ok":true,"policy":{"body_version":7}}`))
	if err != nil || !v.OK {
		t.Fatalf("a nested body_version is not the body's: %+v, %v", v, err)
	}
	for _, c := range []struct {
		name, kind, body, want string
		decode                 func(kind string, body []byte) error
	}{
		{"unknown kind", "run.pause", `{}`, `knows no entry kind "run.pause"`,
			func(k string, b []byte) error { _, err := records.Decode[ledger.RunStart](k, b); return err }},
		{"unknown version", records.KindRunEnd, `{"body_version":2,"status":"ok"}`, "version 2 of run.end, which this build of rlgate does not read",
			func(k string, b []byte) error { _, err := records.Decode[ledger.RunEnd](k, b); return err }},
		{"bad version", records.KindRunEnd, `{"body_version":1,"status":"ok"}`, "want an integer of 2 or more",
			func(k string, b []byte) error { _, err := records.Decode[ledger.RunEnd](k, b); return err }},
		{"wrong type", records.KindPublish, `{}`, "version 1's body is publish.Result",
			func(k string, b []byte) error { _, err := records.Decode[publish.Request](k, b); return err }},
		{"another kind's type", records.KindLog, `{}`, "version 1's body is runner.LogChunk",
			func(k string, b []byte) error { _, err := records.Decode[rollout.Trajectories](k, b); return err }},
	} {
		err := c.decode(c.kind, []byte(c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
	if im, err := records.Decode[runner.ImportStartBody](records.KindRunStart, []byte(`{"imported":{"format":"wandb"},"stage":"rl"}`)); err != nil || im.Stage != "rl" {
		t.Errorf("decode an import's run.start, which embeds the ledger's through runner.StartBody: %+v, %v", im, err)
	}
	if _, err := records.Decode[runner.Preflight](records.KindPreflight, []byte(`{"passed":true}`)); err != nil {
		t.Errorf("decode a preflight: %v", err)
	}
}

// TestRegisterRefusesUndeclared: a version records does not declare, and a
// second type for a version, are mistakes caught when the program starts.
func TestRegisterRefusesUndeclared(t *testing.T) {
	for name, reg := range map[string]func(){
		"undeclared version": func() { records.Register[ledger.RunEnd](records.KindRunEnd, 2) },
		"undeclared kind":    func() { records.Register[ledger.RunEnd]("run.pause", 1) },
		"second type":        func() { records.Register[ledger.RunStart](records.KindRunEnd, 1) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Register did not panic", name)
				}
			}()
			reg()
		}()
	}
}
