package parley_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
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

// layers is the whole layer table of the tree, lowest first (the house
// style's layout, as Tailscale's tstest/deptest declares it): a package
// imports only from layers below its own, and from its own layer only
// the pairs in sameLayer. Every package of the tree is in exactly one
// layer or in testSupport: a new package fails TestLayerTable until it
// is placed.
var layers = []struct {
	name string
	pkgs []string
}{
	{"ground: the domain, codecs and small utilities", []string{
		"parley", "parley/stomp", "parley/schema", "parley/groupcommit", "parley/ratelimit",
		"parley/accept", "parley/dirlock", "parley/subindex", "parley/jwtauth", "parley/oidcauth",
	}},
	{"what the stores share", []string{
		"parley/storagefull", "parley/bulk",
	}},
	{"stores, caches and history (backends among them)", []string{
		"parley/sqlite", "parley/postgres", "parley/inmem", "parley/redis", "parley/rabbitmq",
		"parley/cache", "parley/history", "parley/files",
	}},
	{"fan-out and chat: hub, room events, cluster relay, chat", []string{
		"parley/hub", "parley/roomevents", "parley/cluster", "parley/chat", "parley/retention",
		"parley/webhook",
	}},
	{"edges: gateway, REST, the web client", []string{
		"parley/gateway", "parley/rest", "parley/web",
	}},
	{"tools that drive a server", []string{
		"parley/loadgen", "parley/loadgen/report",
	}},
	{"tools over a stopped store's data", []string{
		"parley/port",
	}},
	{"commands and whole-system tests", []string{
		"parley/cmd/parley", "parley/cmd/httpmirror", "parley/cmd/benchtable", "parley/cmd/unlinkprobe", "parley/chaos",
	}},
}

// sameLayer lists the imports allowed inside one layer, importer to
// imported. The hub and the room events are peers that share the
// subscription index below them (subindex, ground), and neither imports
// the other.
var sameLayer = map[string][]string{
	"parley/loadgen/report": {"parley/loadgen"},
}

// backends wrap one dependency each; they never import each other, and
// only the commands (the wiring point) import them.
var backends = map[string]bool{
	"parley/sqlite": true, "parley/postgres": true, "parley/rabbitmq": true,
	"parley/redis": true, "parley/inmem": true,
}

// testSupport are the packages made for tests (non-_test files, so that
// several packages' tests can share them): no non-test file imports them,
// and they import no project package but the root one, so that a test
// helper never drags a backend into the package under test.
var testSupport = map[string]bool{
	"parley/parleytest": true, "parley/servicetest": true, "parley/postgres/pgtest": true,
	"parley/rest/openapi": true, "parley/oidcauth/oidctest": true,
}

// layerOf maps each package of the table to its layer's index.
func layerOf(t *testing.T) map[string]int {
	t.Helper()
	at := map[string]int{}
	for i, l := range layers {
		for _, p := range l.pkgs {
			if j, dup := at[p]; dup || testSupport[p] {
				t.Errorf("%s is placed twice (layers %d and %d, or also test support)", p, j, i)
			}
			at[p] = i
		}
	}
	return at
}

// importPath is the import path of a package directory of the tree.
func importPath(dir string) string {
	if dir == "." {
		return "parley"
	}
	return "parley/" + dir
}

// TestLayerTable: every package of the tree is in the table, and the
// table names no package that is gone.
func TestLayerTable(t *testing.T) {
	at := layerOf(t)
	pkgs := loadPackages(t)
	for dir := range pkgs {
		if p := importPath(dir); !testSupport[p] {
			if _, ok := at[p]; !ok {
				t.Errorf("package %s is in no layer of layout_test.go: place it in layers (or testSupport)", p)
			}
		}
	}
	tree := map[string]bool{}
	for dir := range pkgs {
		tree[importPath(dir)] = true
	}
	for p := range at {
		if !tree[p] {
			t.Errorf("layers names %s, which is no package of the tree", p)
		}
	}
}

// TestImportDirections enforces the layer table and the house style's
// other import rules.
func TestImportDirections(t *testing.T) {
	at := layerOf(t)
	for dir, p := range loadPackages(t) {
		path := importPath(dir)
		for imp := range p.imports {
			project := imp == "parley" || strings.HasPrefix(imp, "parley/")
			from, placed := at[path]
			to, impPlaced := at[imp]
			switch {
			case path == "parley" && (project || strings.Contains(imp, ".")):
				t.Errorf("root package imports %s: it may import only the standard library", imp)
			case path == "parley/stomp" && (project || strings.Contains(imp, ".") || imp == "net" || strings.HasPrefix(imp, "net/")):
				t.Errorf("stomp imports %s: the codec uses the standard library only, and no net", imp)
			case testSupport[imp]:
				t.Errorf("%s imports %s outside its tests: it is test support", path, imp)
			case testSupport[path] && project && imp != "parley":
				t.Errorf("test support %s imports %s: it may import only the root package of the project", path, imp)
			case !project || testSupport[path] || !placed || !impPlaced:
				// not of the project, or test support (above), or not in
				// the table (TestLayerTable says so)
			case backends[path] && backends[imp]:
				t.Errorf("backend %s imports backend %s: backends never import each other", path, imp)
			case backends[imp] && !strings.HasPrefix(path, "parley/cmd/"):
				t.Errorf("%s imports backend %s: only the commands wire backends", path, imp)
			case to > from:
				t.Errorf("%s (%s) imports %s, a layer above it (%s)", path, layers[from].name, imp, layers[to].name)
			case to == from && !slices.Contains(sameLayer[path], imp):
				t.Errorf("%s imports %s of its own layer (%s): allowed only for the pairs in sameLayer", path, imp, layers[from].name)
			}
		}
	}
}

func TestMain(m *testing.M) {
	// The layout tests read the tree from the module root.
	if _, err := os.Stat("go.mod"); err != nil {
		panic("run from the module root")
	}
	os.Exit(m.Run())
}
