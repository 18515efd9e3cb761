package parley_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// TestLocksListed checks that LOCKS.md names every mutex of the product
// and test-support code, as "pkg Type.field", so that a new lock cannot be
// added without saying where it sits in the order. A field counts when its
// type is sync.Mutex or sync.RWMutex, directly, embedded, as the element of
// an array or slice, or inside an anonymous struct (named Type.outer.inner).
// A pointer to a mutex shares one declared elsewhere and is not counted.
// pkg is the package's directory ("parley" for the root, "loadgen/report").
func TestLocksListed(t *testing.T) {
	text, err := os.ReadFile("LOCKS.md")
	if err != nil {
		t.Fatalf("read LOCKS.md: %v", err)
	}
	locks := mutexFields(t)
	if len(locks) == 0 {
		t.Fatal("found no mutex fields: the walk is broken")
	}
	for _, l := range locks {
		re := regexp.MustCompile(`(^|[^\w/])` + regexp.QuoteMeta(l.name) + `\b`)
		if !re.Match(text) {
			t.Errorf("LOCKS.md does not name %s (%s)", l.name, l.pos)
		}
	}
}

type mutexField struct {
	name string // "pkg Type.field"
	pos  string // file:line
}

// mutexFields walks the non-test Go files and returns every struct field
// whose type holds a sync.Mutex or sync.RWMutex by value.
func mutexFields(t *testing.T) []mutexField {
	t.Helper()
	var out []mutexField
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "data") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(filepath.Dir(path))
		if pkg == "." {
			pkg = "parley"
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			if st, ok := ts.Type.(*ast.StructType); ok {
				for _, name := range structMutexes(st, "") {
					out = append(out, mutexField{
						name: pkg + " " + ts.Name.Name + "." + name,
						pos:  fset.Position(ts.Pos()).String(),
					})
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatalf("walk: %v", err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// structMutexes returns the names, prefixed, of st's fields that hold a mutex.
func structMutexes(st *ast.StructType, prefix string) []string {
	var names []string
	for _, f := range st.Fields.List {
		typ := f.Type
		for {
			switch a := typ.(type) {
			case *ast.ArrayType:
				typ = a.Elt
				continue
			}
			break
		}
		var fieldNames []string
		for _, n := range f.Names {
			fieldNames = append(fieldNames, n.Name)
		}
		switch x := typ.(type) {
		case *ast.SelectorExpr:
			if id, ok := x.X.(*ast.Ident); ok && id.Name == "sync" && (x.Sel.Name == "Mutex" || x.Sel.Name == "RWMutex") {
				if len(fieldNames) == 0 { // embedded
					fieldNames = []string{x.Sel.Name}
				}
				for _, n := range fieldNames {
					names = append(names, prefix+n)
				}
			}
		case *ast.StructType:
			for _, n := range fieldNames {
				names = append(names, structMutexes(x, prefix+n+".")...)
			}
		}
	}
	return names
}
