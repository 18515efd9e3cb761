package redis

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"parley"
)

// The methods of parley.Store by what they do to the hot data. A write
// that commits events (the store hands them to Apply) must return only
// once its commit is in Redis, so HotStore has a method of its own for it
// (hotwrites.go) that waits (caughtUp); the others are reads, or writes
// of what the hot data does not hold.
var (
	commitsEvents  = []string{"CreateRoom", "Join", "Leave", "Send", "MarkRead", "UpdateRoom", "SetRole", "RemoveMember", "EditMessage", "DeleteMessage", "React", "Pin"}
	commitsNothing = []string{
		"CreateUser", "UserByName", "User", "CreateToken", "TokenUser", "RevokeToken", "RevokeUserTokens",
		"Room", "Member", "Members", "Memberships", "Messages", "Rooms", "Ping", "Close",
		"RoomMembers", "Bans", "Unban", "Changed", "SearchRoom", "Search", "Reactors", "MyReactions", "Replies", "Pins",
		"SetNotifyLevel", "NotifyStates", "NotifyLevels",
	}
)

// TestHotStoreWritesWait: every write of parley.Store that commits events
// has a HotStore method that waits for its commit to be in Redis, and
// every method of parley.Store is listed above, so that a new one is
// sorted when it is added.
func TestHotStoreWritesWait(t *testing.T) {
	waiting := hotStoreMethodsCalling(t, "caughtUp")
	listed := map[string]bool{}
	for _, m := range commitsEvents {
		listed[m] = true
		if !waiting[m] {
			t.Errorf("HotStore.%s does not wait for its commit to be in Redis: declare it in hotwrites.go, calling caughtUp after the inner store's", m)
		}
	}
	for _, m := range commitsNothing {
		listed[m] = true
	}
	st := reflect.TypeFor[parley.Store]()
	for i := range st.NumMethod() {
		if m := st.Method(i).Name; !listed[m] {
			t.Errorf("parley.Store.%s is not sorted: list it in commitsEvents (and give HotStore a method that waits, in hotwrites.go) if it commits events, else in commitsNothing", m)
		}
	}
}

// hotStoreMethodsCalling returns the methods of *HotStore declared in this
// package whose body calls a method named call.
func hotStoreMethodsCalling(t *testing.T, call string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || len(fd.Recv.List) != 1 || fd.Body == nil {
				continue
			}
			star, ok := fd.Recv.List[0].Type.(*ast.StarExpr)
			if !ok {
				continue
			}
			if id, ok := star.X.(*ast.Ident); !ok || id.Name != "HotStore" {
				continue
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				if c, ok := n.(*ast.CallExpr); ok {
					if sel, ok := c.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == call {
						out[fd.Name.Name] = true
					}
				}
				return true
			})
		}
	}
	return out
}
