package parley_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// pkgInfo is what the layout tests know of one package directory.
type pkgInfo struct {
	dir     string          // relative to the module root, "." for the root
	imports map[string]bool // non-test imports
	docs    []string        // the non-test files with a package comment
}

func loadPackages(t *testing.T) map[string]*pkgInfo {
	t.Helper()
	pkgs := map[string]*pkgInfo{}
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
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		p := pkgs[dir]
		if p == nil {
			p = &pkgInfo{dir: dir, imports: map[string]bool{}}
			pkgs[dir] = p
		}
		if f.Doc != nil && strings.TrimSpace(f.Doc.Text()) != "" {
			p.docs = append(p.docs, filepath.Base(path))
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			p.imports[path] = true
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk: %v", err)
	}
	return pkgs
}

// TestPackageDocs checks that every package says what it is for, in one
// place a reader can find: its doc.go, and no other file.
func TestPackageDocs(t *testing.T) {
	for dir, p := range loadPackages(t) {
		if len(p.docs) != 1 || p.docs[0] != "doc.go" {
			t.Errorf("package %s has its package comment in %v, want doc.go only", dir, p.docs)
		}
	}
}

// backends wrap one dependency each; they never import each other, and
// only cmd/parley (the wiring point) imports them.
var backends = map[string]bool{
	"parley/sqlite": true, "parley/postgres": true, "parley/rabbitmq": true,
	"parley/redis": true, "parley/inmem": true,
}

// testSupport are the packages made for tests (non-_test files, so that
// several packages' tests can share them): no non-test file imports them,
// and they import no project package but the root one, so that a test
// helper never drags a backend into the package under test.
var testSupport = map[string]bool{"parley/servicetest": true}

// fanOut are the packages of the hub's layer that hand committed events
// to this node's subscribers, with the only project packages each may
// import: the hub and the room events are peers that share the
// subscription index below them (subindex, which imports nothing of the
// project), and neither imports the other.
var fanOut = map[string]map[string]bool{
	"parley/hub":        {"parley": true, "parley/subindex": true},
	"parley/roomevents": {"parley": true, "parley/subindex": true},
	"parley/subindex":   {},
}

// TestImportDirections enforces the layout of the house style.
func TestImportDirections(t *testing.T) {
	for dir, p := range loadPackages(t) {
		path := "parley"
		if dir != "." {
			path = "parley/" + dir
		}
		for imp := range p.imports {
			project := imp == "parley" || strings.HasPrefix(imp, "parley/")
			switch {
			case path == "parley" && (project || strings.Contains(imp, ".")):
				t.Errorf("root package imports %s: it may import only the standard library", imp)
			case path == "parley/stomp" && (project || strings.Contains(imp, ".") || imp == "net" || strings.HasPrefix(imp, "net/")):
				t.Errorf("stomp imports %s: the codec uses the standard library only, and no net", imp)
			case backends[imp] && path != "parley/cmd/parley" && !strings.HasPrefix(path, "parley/cmd/"):
				t.Errorf("%s imports backend %s: only cmd/parley wires backends", path, imp)
			case testSupport[imp]:
				t.Errorf("%s imports %s outside its tests: it is test support", path, imp)
			case fanOut[path] != nil && project && !fanOut[path][imp]:
				t.Errorf("%s imports %s: it may import only %v of the project", path, imp, keys(fanOut[path]))
			case testSupport[path] && project && imp != "parley":
				t.Errorf("test support %s imports %s: it may import only the root package of the project", path, imp)
			}
		}
	}
}

// keys returns m's keys, sorted.
func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func TestMain(m *testing.M) {
	// The layout tests read the tree from the module root.
	if _, err := os.Stat("go.mod"); err != nil {
		panic("run from the module root")
	}
	os.Exit(m.Run())
}
