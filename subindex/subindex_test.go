package subindex

import "testing"

type sub struct {
	name string
	idx  int
}

func pos(s *sub) *int { return &s.idx }

// check reports the names in key's list and fails if a position is off.
func check(t *testing.T, x Index[*sub], key string) []string {
	t.Helper()
	var names []string
	for i, s := range x[key] {
		if s.idx != i {
			t.Errorf("%s at %d has idx %d", s.name, i, s.idx)
		}
		names = append(names, s.name)
	}
	return names
}

func TestAddRemove(t *testing.T) {
	x := Index[*sub]{}
	a, b, c := &sub{name: "a"}, &sub{name: "b"}, &sub{name: "c"}
	for _, s := range []*sub{a, b, c} {
		x.Add("room", s, pos)
	}
	if got := check(t, x, "room"); len(got) != 3 {
		t.Fatalf("list = %v, want a b c", got)
	}
	if !x.Remove("room", a, pos) {
		t.Fatal("Remove(a) = false, want true")
	}
	if a.idx != -1 {
		t.Errorf("a.idx = %d after Remove, want -1", a.idx)
	}
	if got := check(t, x, "room"); len(got) != 2 || got[0] != "c" || got[1] != "b" {
		t.Errorf("list after removing a = %v, want [c b] (the last swapped in)", got)
	}
	if x.Remove("room", a, pos) {
		t.Error("Remove(a) twice = true, want false")
	}
	if x.Remove("other", b, pos) {
		t.Error("Remove(b) under another key = true, want false")
	}
	x.Remove("room", b, pos)
	x.Remove("room", c, pos)
	if _, ok := x["room"]; ok || len(x) != 0 {
		t.Errorf("emptied list still in the index: %v", x)
	}
}

// TestRemoveStale checks that a subscription whose position names another
// one's slot removes nothing.
func TestRemoveStale(t *testing.T) {
	x := Index[*sub]{}
	a, b := &sub{name: "a"}, &sub{name: "b"}
	x.Add("room", a, pos)
	b.idx = 0 // never added, but claims a's slot
	if x.Remove("room", b, pos) {
		t.Error("Remove of an unregistered sub = true, want false")
	}
	if got := check(t, x, "room"); len(got) != 1 || got[0] != "a" {
		t.Errorf("list = %v, want [a]", got)
	}
}
