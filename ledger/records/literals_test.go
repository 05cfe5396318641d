package records_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rlgate/rlgate/ledger/records"
)

// TestNoLiteralKinds: outside ledger/records, no non-test Go file spells an
// entry kind, a run status, an artifact role or an artifact kind as a
// string literal where it means one (see literals).
func TestNoLiteralKinds(t *testing.T) {
	fset := token.NewFileSet()
	var found []string
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, repoRoot+"/"))
		if d.IsDir() {
			if p != repoRoot && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || rel == "ledger/records") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		found = append(found, literals(fset, f)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Error(f)
	}
}

// TestLiteralsFinds: the check finds each way of spelling a kind, status,
// role or artifact kind, and passes the same words where they mean
// something else.
func TestLiteralsFinds(t *testing.T) {
	src := `package p

import "log"

type flag struct{ Name string }

func f(e, r, a, s any, x string) {
	_ = ledger.Record{Kind: "run.start"}                 // bad: a dotted kind
	_ = ledger.Filter{Kind: "metrics"}                   // bad: a kind where a kind goes
	if e.Kind == "outcomes" {}                           // bad
	_ = gateLog("audit.gold")                            // bad: dotted, anywhere
	r.Status = "ok"                                      // bad
	if "failed" != r.Status {}                           // bad
	switch r.Status { case "interrupted": }              // bad
	_ = ledger.Artifact{Role: "input", Kind: "file"}     // bad twice
	if a.Role == "output" && a.Kind == "checkpoint" {}  // bad twice
	s.Status, s.Seq = "running", 1                       // bad
	_ = flag{Name: "metrics"}                            // fine: a flag's name
	_ = filepath.Join(x, "log")                          // fine: a file name
	if x == "ok" {}                                      // fine: not a field that means a status
	_ = struct{ A int ` + "`json:\"run.start\"`" + ` }{}  // fine: a struct tag
	_ = Start{Kind: "sft"}                               // fine: not an entry or artifact kind
	log.Print("run.end")                                 // bad: dotted
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var lines []int
	for _, l := range literals(fset, f) {
		n, _ := strconv.Atoi(strings.Split(l, ":")[1])
		lines = append(lines, n)
	}
	want := []int{8, 9, 10, 11, 12, 13, 14, 15, 15, 16, 16, 17, 23}
	if !slices.Equal(lines, want) {
		t.Errorf("found on lines %v, want %v:\n%s", lines, want, strings.Join(literals(fset, f), "\n"))
	}
}

// literals returns, for f, where it spells an entry kind, a run status, an
// artifact role or an artifact kind as a string literal. A dotted kind
// ("run.start", "audit.gold") is refused anywhere but an import path or a
// struct tag; a word that is also a plain word ("metrics", "ok", "input")
// only where it stands for a kind, status, role or artifact kind: as the
// value of a Kind, Status or Role field in a composite literal, compared
// with, assigned to or switched on as such a field. So a flag named
// "metrics" passes and end.Status = "ok" does not.
func literals(fset *token.FileSet, f *ast.File) []string {
	kinds := records.Kinds()
	statuses := []string{string(records.StatusRunning), string(records.StatusOK), string(records.StatusFailed), string(records.StatusInterrupted)}
	roles := []string{string(records.RoleInput), string(records.RoleOutput), string(records.RoleConfig), string(records.RoleDataset), string(records.RoleCheckpoint)}
	artifactKinds := []string{string(records.ArtifactDataset), string(records.ArtifactBenchmark), string(records.ArtifactCheckpoint), string(records.ArtifactFile), string(records.ArtifactConfig)}
	// field -> the values a literal in its place must not spell.
	meaning := map[string][]string{
		"Kind":   slices.Concat(kinds, artifactKinds),
		"Status": statuses,
		"Role":   roles,
	}
	var found []string
	seen := map[token.Pos]bool{} // a dotted kind in a Kind field is one finding
	report := func(lit *ast.BasicLit, what string) {
		if !seen[lit.Pos()] {
			seen[lit.Pos()] = true
			found = append(found, fset.Position(lit.Pos()).String()+": "+lit.Value+" "+what)
		}
	}
	// field checks e, the value of or a comparand of field, for a literal
	// spelling what the field means.
	field := func(name string, e ast.Expr) {
		lit, ok := e.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return
		}
		v, _ := strconv.Unquote(lit.Value)
		if slices.Contains(meaning[name], v) {
			report(lit, "as a "+name+"; use the records constant")
		}
	}
	skip := map[ast.Node]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ImportSpec:
			return false
		case *ast.Field:
			if n.Tag != nil {
				skip[n.Tag] = true
			}
		case *ast.BasicLit:
			if n.Kind != token.STRING || skip[n] {
				return true
			}
			v, _ := strconv.Unquote(n.Value)
			if strings.Contains(v, ".") && (slices.Contains(kinds, v) || strings.HasPrefix(v, records.AuditPrefix)) {
				report(n, "spells an entry kind; use the records constant")
			}
		case *ast.KeyValueExpr:
			if k, ok := n.Key.(*ast.Ident); ok {
				field(k.Name, n.Value)
			}
		case *ast.BinaryExpr:
			if n.Op == token.EQL || n.Op == token.NEQ {
				if s, ok := n.X.(*ast.SelectorExpr); ok {
					field(s.Sel.Name, n.Y)
				}
				if s, ok := n.Y.(*ast.SelectorExpr); ok {
					field(s.Sel.Name, n.X)
				}
			}
		case *ast.AssignStmt:
			if len(n.Lhs) == len(n.Rhs) {
				for i, l := range n.Lhs {
					if s, ok := l.(*ast.SelectorExpr); ok {
						field(s.Sel.Name, n.Rhs[i])
					}
				}
			}
		case *ast.SwitchStmt:
			if s, ok := n.Tag.(*ast.SelectorExpr); ok {
				for _, c := range n.Body.List {
					for _, e := range c.(*ast.CaseClause).List {
						field(s.Sel.Name, e)
					}
				}
			}
		}
		return true
	})
	return found
}
