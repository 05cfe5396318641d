package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	module = "github.com/rlgate/rlgate/"
	// repoRoot is the repository, seen from this package's directory.
	repoRoot = "../.."
	// architectureDoc holds the import-direction tables this test enforces.
	architectureDoc = "docs/ARCHITECTURE.md"
)

// importRules is the import direction docs/ARCHITECTURE.md states.
type importRules struct {
	// Allowed maps each top-level folder to the top-level folders it may
	// import, itself included; a folder in Any may import anything.
	Allowed map[string][]string
	Any     map[string]bool
	// Forbidden are finer rules: a package path to the package paths it
	// must not import although its floor allows them.
	Forbidden map[string][]string
}

// The headers of the two tables, as docs/ARCHITECTURE.md documents them.
var (
	directionHeader = []string{"package", "may import besides itself"}
	forbiddenHeader = []string{"package", "must not import"}
	kindsHeader     = []string{"kind", "constant (file)", "body type", "written by", "read by"}
)

var (
	separatorCell = regexp.MustCompile(`^:?-{3,}:?$`)
	packageCell   = regexp.MustCompile("^`([a-z][a-z0-9_-]*(?:/[a-z][a-z0-9_-]*)*)`$")
	kindCell      = regexp.MustCompile("^`([a-z][a-z0-9_]*(?:\\.[a-z0-9_]+)*)`$")
	// constantCell is "`pkg.KindX` (path/file.go)", words allowed between.
	constantCell = regexp.MustCompile("^`([a-z][a-z0-9]*)\\.(Kind[A-Za-z0-9]*)`[^()]* \\(([a-z0-9_/]+\\.go)\\)$")
)

// mdTable is a Markdown table: its rows of cells, header first, and the
// line of the document each row is on.
type mdTable struct {
	rows  [][]string
	lines []int
}

// parseImportRules reads the two tables of the "## Import direction"
// section of doc. Anything that does not have the documented shape is an
// error naming the line, never a rule that allows more.
func parseImportRules(doc string) (importRules, error) {
	tables, err := sectionTables(doc, "## Import direction")
	if err != nil {
		return importRules{}, err
	}
	if len(tables) != 2 {
		return importRules{}, fmt.Errorf("section \"## Import direction\" holds %d tables, want 2 (the direction, then the finer rules)", len(tables))
	}
	r := importRules{Allowed: map[string][]string{}, Any: map[string]bool{}, Forbidden: map[string][]string{}}
	rows, err := tables[0].packageRows(directionHeader)
	if err != nil {
		return importRules{}, err
	}
	for _, row := range rows {
		top := row.pkg
		if strings.Contains(top, "/") {
			return importRules{}, fmt.Errorf("line %d: %q is not a top-level folder", row.line, top)
		}
		switch row.cell {
		case "any":
			r.Any[top] = true
			continue
		case "–":
			r.Allowed[top] = []string{top}
			continue
		}
		names, err := packageList(row.cell, row.line)
		if err != nil {
			return importRules{}, err
		}
		for _, n := range names {
			if strings.Contains(n, "/") || n == top {
				return importRules{}, fmt.Errorf("line %d: %q may import %q: name other top-level folders only", row.line, top, n)
			}
		}
		r.Allowed[top] = append([]string{top}, names...)
	}
	for top, names := range r.Allowed {
		for _, n := range names {
			if _, ok := r.Allowed[n]; !ok && !r.Any[n] {
				return importRules{}, fmt.Errorf("%q may import %q, which has no row of its own", top, n)
			}
		}
	}
	if rows, err = tables[1].packageRows(forbiddenHeader); err != nil {
		return importRules{}, err
	}
	for _, row := range rows {
		if r.Forbidden[row.pkg], err = packageList(row.cell, row.line); err != nil {
			return importRules{}, err
		}
	}
	return r, nil
}

// sectionTables returns the tables between heading and the next heading
// of its level or above.
func sectionTables(doc, heading string) ([]mdTable, error) {
	lines := strings.Split(doc, "\n")
	start := slices.Index(lines, heading)
	if start < 0 {
		return nil, fmt.Errorf("no line %q", heading)
	}
	level := headingLevel(heading)
	var tables []mdTable
	inTable := false
	for i := start + 1; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if n := headingLevel(l); n > 0 && n <= level {
			break
		}
		if !strings.HasPrefix(l, "|") {
			inTable = false
			continue
		}
		if len(l) < 2 || !strings.HasSuffix(l, "|") {
			return nil, fmt.Errorf("line %d: a table row must start and end with |", i+1)
		}
		if !inTable {
			tables = append(tables, mdTable{})
			inTable = true
		}
		t := &tables[len(tables)-1]
		cells := strings.Split(l[1:len(l)-1], "|")
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		t.rows, t.lines = append(t.rows, cells), append(t.lines, i+1)
	}
	return tables, nil
}

// headingLevel is the number of #s a Markdown heading line starts with,
// 0 for any other line.
func headingLevel(l string) int {
	n := len(l) - len(strings.TrimLeft(l, "#"))
	if n == 0 || !strings.HasPrefix(l[n:], " ") {
		return 0
	}
	return n
}

// checkShape refuses a table whose header is not header, whose second row
// is not a separator, that has no rows, or a row of another width.
func (t mdTable) checkShape(header []string) error {
	if !slices.Equal(t.rows[0], header) {
		return fmt.Errorf("line %d: table header %q, want %q", t.lines[0], t.rows[0], header)
	}
	if len(t.rows) < 3 {
		return fmt.Errorf("line %d: the table has no rows", t.lines[0])
	}
	for i, row := range t.rows {
		if len(row) != len(header) {
			return fmt.Errorf("line %d: %d cells, want %d", t.lines[i], len(row), len(header))
		}
	}
	for _, c := range t.rows[1] {
		if !separatorCell.MatchString(c) {
			return fmt.Errorf("line %d: not a separator row", t.lines[1])
		}
	}
	return nil
}

// packageRow is a row of a two-column table whose first cell names a
// package.
type packageRow struct {
	line      int
	pkg, cell string
}

// packageRows checks the table's shape against header and reads its rows,
// refusing a package with two rows.
func (t mdTable) packageRows(header []string) ([]packageRow, error) {
	if err := t.checkShape(header); err != nil {
		return nil, err
	}
	var rows []packageRow
	for i, row := range t.rows[2:] {
		line := t.lines[i+2]
		p, err := packageName(row[0], line)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(rows, func(r packageRow) bool { return r.pkg == p }) {
			return nil, fmt.Errorf("line %d: %q has a second row", line, p)
		}
		rows = append(rows, packageRow{line, p, row[1]})
	}
	return rows, nil
}

// packageName reads a cell holding one package path in backticks.
func packageName(cell string, line int) (string, error) {
	m := packageCell.FindStringSubmatch(cell)
	if m == nil {
		return "", fmt.Errorf("line %d: %q is not a package path in backticks", line, cell)
	}
	return m[1], nil
}

// packageList reads a cell of package paths in backticks, separated by
// commas: at least one, none twice.
func packageList(cell string, line int) ([]string, error) {
	var names []string
	for _, c := range strings.Split(cell, ",") {
		n, err := packageName(strings.TrimSpace(c), line)
		if err != nil {
			return nil, err
		}
		if slices.Contains(names, n) {
			return nil, fmt.Errorf("line %d: %q is named twice", line, n)
		}
		names = append(names, n)
	}
	return names, nil
}

// loadImportRules parses the repository's docs/ARCHITECTURE.md.
func loadImportRules(t *testing.T) importRules {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(repoRoot, architectureDoc))
	if err != nil {
		t.Fatal(err)
	}
	r, err := parseImportRules(string(doc))
	if err != nil {
		t.Fatalf("%s: %v", architectureDoc, err)
	}
	return r
}

// goFiles yields the repository's non-test Go files with their import paths.
func goFiles(t *testing.T, fn func(rel string, imports []string, src []byte)) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != repoRoot {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, p, src, parser.ImportsOnly)
		if err != nil {
			return err
		}
		var imps []string
		for _, i := range f.Imports {
			s, _ := strconv.Unquote(i.Path.Value)
			imps = append(imps, s)
		}
		rel, _ := filepath.Rel(repoRoot, p)
		fn(filepath.ToSlash(rel), imps, src)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// within reports whether package path p is dir or below it.
func within(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

func TestImportDirection(t *testing.T) {
	t.Parallel()
	rules := loadImportRules(t)
	seen := map[string]bool{}
	goFiles(t, func(rel string, imports []string, _ []byte) {
		top := strings.SplitN(rel, "/", 2)[0]
		seen[top] = true
		allowed, ok := rules.Allowed[top]
		if !ok && !rules.Any[top] {
			t.Errorf("%s: top-level folder %q has no row in %s's import-direction table", rel, top, architectureDoc)
			return
		}
		for _, imp := range imports {
			ours, found := strings.CutPrefix(imp, module)
			if !found {
				continue
			}
			okImp := rules.Any[top] || slices.ContainsFunc(allowed, func(a string) bool { return within(ours, a) })
			for dir, bad := range rules.Forbidden {
				if strings.HasPrefix(rel, dir+"/") && slices.ContainsFunc(bad, func(b string) bool { return within(ours, b) }) {
					okImp = false
				}
			}
			if !okImp {
				t.Errorf("%s imports %s, against the import direction in %s", rel, imp, architectureDoc)
			}
		}
	})
	// A row for a folder that is gone would hide a stale table.
	for _, top := range slices.Concat(slices.Collect(maps.Keys(rules.Allowed)), slices.Collect(maps.Keys(rules.Any))) {
		if !seen[top] {
			t.Errorf("%s: the import-direction table has a row for %q, which holds no Go code", architectureDoc, top)
		}
	}
	for dir, bad := range rules.Forbidden {
		for _, p := range append([]string{dir}, bad...) {
			if fi, err := os.Stat(filepath.Join(repoRoot, p)); err != nil || !fi.IsDir() {
				t.Errorf("%s: the finer import rules name %q, which is not a package", architectureDoc, p)
			}
		}
	}
}

// TestParseImportRules: the documented shape reads into the rules, and a
// table that strays from it is refused with the line, so a typo can never
// turn into a rule that allows everything.
func TestParseImportRules(t *testing.T) {
	t.Parallel()
	const direction = "| package | may import besides itself |\n|---|---|\n"
	const forbidden = "\n| package | must not import |\n|---|---|\n| `low/a` | `low/b` |\n"
	doc := func(rows string) string {
		return "# Doc\n\n## Import direction\n\nText.\n\n" + direction + rows + forbidden + "\n## Next\n\n| x | y |\n"
	}
	got, err := parseImportRules(doc("| `low` | – |\n| `mid` | `low` |\n| `top` | `low`, `mid` |\n| `cmd` | any |\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := importRules{
		Allowed:   map[string][]string{"low": {"low"}, "mid": {"mid", "low"}, "top": {"top", "low", "mid"}},
		Any:       map[string]bool{"cmd": true},
		Forbidden: map[string][]string{"low/a": {"low/b"}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("rules (-want +got):\n%s", d)
	}
	for _, tt := range []struct{ name, doc, err string }{
		{"no section", "# Doc\n\n" + direction + "| `low` | – |\n", `no line "## Import direction"`},
		{"one table", "## Import direction\n\n" + direction + "| `low` | – |\n", "holds 1 tables"},
		{"other header", "## Import direction\n\n| folder | imports |\n|---|---|\n| `low` | – |\n" + forbidden, "table header"},
		{"no rows", doc(""), "has no rows"},
		{"three cells", doc("| `low` | – | x |\n"), "line 9: 3 cells, want 2"},
		{"no separator", "## Import direction\n\n| package | may import besides itself |\n| `low` | – |\n| `mid` | `low` |\n" + forbidden, "not a separator row"},
		{"bare name", doc("| low | – |\n"), `"low" is not a package path in backticks`},
		{"misspelt any", doc("| `low` | – |\n| `cmd` | everything |\n"), `"everything" is not a package path in backticks`},
		{"empty cell", doc("| `low` | |\n"), `"" is not a package path in backticks`},
		{"unknown folder", doc("| `low` | – |\n| `mid` | `lwo` |\n"), `"mid" may import "lwo", which has no row of its own`},
		{"sub-package", doc("| `low` | – |\n| `mid` | `low/a` |\n"), "name other top-level folders only"},
		{"itself", doc("| `mid` | `mid` |\n"), "name other top-level folders only"},
		{"row twice", doc("| `low` | – |\n| `low` | any |\n"), `"low" has a second row`},
		{"named twice", doc("| `low` | – |\n| `mid` | `low`, `low` |\n"), `"low" is named twice`},
		{"unclosed row", doc("| `low` | – \n"), "must start and end with |"},
	} {
		_, err := parseImportRules(tt.doc)
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: error %v, want one saying %q", tt.name, err, tt.err)
		}
	}
}

// kindConst is a string constant whose name starts with Kind: an entry
// kind, or with a trailing dot the prefix of a family of kinds.
type kindConst struct{ pkg, name, file, value string }

// kindConsts finds every such constant in the repository's Go code, and
// the kinds written as a bare string into a ledger.Record (by file).
func kindConsts(t *testing.T) (consts []kindConst, literals map[string][]string) {
	t.Helper()
	literals = map[string][]string{}
	goFiles(t, func(rel string, _ []string, src []byte) {
		f, err := parser.ParseFile(token.NewFileSet(), rel, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if cl, ok := n.(*ast.CompositeLit); ok && isRecord(f, cl.Type) {
				for _, e := range cl.Elts {
					kv, ok := e.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					if k, ok := kv.Key.(*ast.Ident); !ok || k.Name != "Kind" {
						continue
					}
					if lit, ok := kv.Value.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						v, _ := strconv.Unquote(lit.Value)
						literals[v] = append(literals[v], rel)
					}
				}
			}
			return true
		})
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if !strings.HasPrefix(n.Name, "Kind") || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						v, _ := strconv.Unquote(lit.Value)
						consts = append(consts, kindConst{f.Name.Name, n.Name, rel, v})
					}
				}
			}
		}
	})
	return consts, literals
}

// isRecord reports whether ty, the type of a composite literal in f, is
// ledger.Record (Record in package ledger itself).
func isRecord(f *ast.File, ty ast.Expr) bool {
	switch ty := ty.(type) {
	case *ast.SelectorExpr:
		x, ok := ty.X.(*ast.Ident)
		return ok && x.Name == "ledger" && ty.Sel.Name == "Record"
	case *ast.Ident:
		return f.Name.Name == "ledger" && ty.Name == "Record"
	}
	return false
}

// TestArchitectureKinds: the table of entry kinds in docs/ARCHITECTURE.md
// names, for each kind, the constant that spells it and the file that
// declares it, and leaves out no Kind constant of the code.
func TestArchitectureKinds(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join(repoRoot, architectureDoc))
	if err != nil {
		t.Fatal(err)
	}
	tables, err := sectionTables(string(doc), "## Entry kinds")
	if err != nil || len(tables) != 1 {
		t.Fatalf("%s: want one table under \"## Entry kinds\" (%v)", architectureDoc, err)
	}
	kinds := tables[0]
	if err := kinds.checkShape(kindsHeader); err != nil {
		t.Fatalf("%s: %v", architectureDoc, err)
	}
	consts, literals := kindConsts(t)
	cited := map[kindConst]bool{}
	listed := map[string]bool{}
	for i, row := range kinds.rows[2:] {
		line := kinds.lines[i+2]
		m := constantCell.FindStringSubmatch(row[1])
		if m == nil {
			t.Errorf("%s line %d: %q does not name a constant and its file as \"`pkg.KindX` (path/file.go)\"", architectureDoc, line, row[1])
			continue
		}
		at := slices.IndexFunc(consts, func(c kindConst) bool { return c.pkg == m[1] && c.name == m[2] && c.file == m[3] })
		if at < 0 {
			t.Errorf("%s line %d: %s declares no constant %s.%s", architectureDoc, line, m[3], m[1], m[2])
			continue
		}
		c := consts[at]
		cited[c] = true
		for _, k := range strings.Split(row[0], ",") {
			km := kindCell.FindStringSubmatch(strings.TrimSpace(k))
			switch {
			case km == nil:
				t.Errorf("%s line %d: %q is not a kind in backticks", architectureDoc, line, k)
			case km[1] != c.value && !(strings.HasSuffix(c.value, ".") && strings.HasPrefix(km[1], c.value)):
				t.Errorf("%s line %d: kind %q, but %s.%s is %q", architectureDoc, line, km[1], c.pkg, c.name, c.value)
			default:
				listed[km[1]] = true
			}
		}
	}
	for _, c := range consts {
		if !cited[c] {
			t.Errorf("%s: %s declares the entry kind %s.%s = %q, which its table of entry kinds does not list", architectureDoc, c.file, c.pkg, c.name, c.value)
		}
	}
	for k, files := range literals {
		if !listed[k] {
			t.Errorf("%s: its table of entry kinds does not list %q, which %s appends", architectureDoc, k, strings.Join(files, ", "))
		}
	}
}

// TestNoFailedTo is a house rule: errors read as a path of what was being
// done ("open ledger: ..."), never "failed to".
func TestNoFailedTo(t *testing.T) {
	t.Parallel()
	goFiles(t, func(rel string, _ []string, src []byte) {
		if strings.Contains(strings.ToLower(string(src)), "failed to") {
			t.Errorf("%s says \"failed to\"; write what was being done instead", rel)
		}
	})
}

// TestCitesOnlyRepoFiles: code and documents cite files of the repository
// only. These three never were in it; what they held is stated where it is
// used, or in docs/ARCHITECTURE.md.
func TestCitesOnlyRepoFiles(t *testing.T) {
	t.Parallel()
	var outside []string
	// The notes were also cited without their extension; the name is
	// split here so that this file does not cite it.
	notes := "FIELD-" + "NOTES"
	for _, name := range []string{"DESIGN", "STYLE", notes} {
		outside = append(outside, name+".md")
	}
	outside = append(outside, notes)
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, ".md") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, name := range outside {
			if strings.Contains(string(src), name) {
				rel, _ := filepath.Rel(repoRoot, p)
				t.Errorf("%s cites %s, which is not in the repository; state the fact, or cite a file that is", filepath.ToSlash(rel), name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestCmdFilesAreThin: a command file holds flags, one call and its
// output (docs/ARCHITECTURE.md, the workflow floor), so none grows past
// 150 lines; one that does holds logic that belongs in a package below.
func TestCmdFilesAreThin(t *testing.T) {
	t.Parallel()
	const most = 150
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(src), "\n"); n > most {
			t.Errorf("cmd/rlgate/%s has %d lines, more than %d: move what it decides or composes into a workflow package (or the package that owns it)", name, n, most)
		}
	}
}
