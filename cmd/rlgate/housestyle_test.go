package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/rlgate/rlgate/"

// allowedImports is DESIGN.md's import direction: for each top-level
// package (sub-packages included), the packages of ours it may import.
var allowedImports = map[string][]string{
	"ledger":    {"ledger"},
	"stats":     {"stats"},
	"manifests": {"manifests", "ledger"},
	"gpu":       {"gpu", "ledger", "manifests"},
	"stages":    {"stages", "ledger", "manifests", "gpu"},
	"audit":     {"audit", "ledger", "manifests", "stats", "stages"},
	"reports":   {"reports", "ledger", "audit", "stats", "stages"},
	"cmd":       {""}, // everything
	"bench":     {""},
	"examples":  {""},
}

// forbiddenImports are finer rules: the policy side never sees gold.
var forbiddenImports = map[string][]string{
	"stages/rollout": {"stages/grade", "stages/gold"},
	"stages/sqlenv":  {"stages/grade", "stages/gold"},
	"stages/tasks":   {"stages/grade", "stages/gold"},
}

// goFiles yields the repository's non-test Go files with their import paths.
func goFiles(t *testing.T, fn func(rel string, imports []string, src []byte)) {
	t.Helper()
	root := "../.."
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != root {
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
		rel, _ := filepath.Rel(root, p)
		fn(filepath.ToSlash(rel), imps, src)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestImportDirection(t *testing.T) {
	goFiles(t, func(rel string, imports []string, _ []byte) {
		top := strings.SplitN(rel, "/", 2)[0]
		allowed, ok := allowedImports[top]
		if !ok {
			t.Errorf("%s: top-level directory %q is not in DESIGN.md's package table", rel, top)
			return
		}
		for _, imp := range imports {
			ours, found := strings.CutPrefix(imp, module)
			if !found {
				continue
			}
			okImp := false
			for _, a := range allowed {
				if a == "" || ours == a || strings.HasPrefix(ours, a+"/") {
					okImp = true
				}
			}
			for dir, bad := range forbiddenImports {
				if strings.HasPrefix(rel, dir+"/") {
					for _, b := range bad {
						if ours == b || strings.HasPrefix(ours, b+"/") {
							okImp = false
						}
					}
				}
			}
			if !okImp {
				t.Errorf("%s imports %s, against the import direction in DESIGN.md", rel, imp)
			}
		}
	})
}

// TestNoFailedTo is a house rule: errors read as a path of what was being
// done ("open ledger: ..."), never "failed to".
func TestNoFailedTo(t *testing.T) {
	goFiles(t, func(rel string, _ []string, src []byte) {
		if strings.Contains(strings.ToLower(string(src)), "failed to") {
			t.Errorf("%s says \"failed to\"; write what was being done instead", rel)
		}
	})
}
