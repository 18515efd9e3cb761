package schema

import (
	"fmt"
	"testing"
	"testing/fstest"
)

func TestLoad(t *testing.T) {
	fsys := fstest.MapFS{
		"m/0002_b.sql":  {Data: []byte("B")},
		"m/0001_a.sql":  {Data: []byte("A")},
		"m/0010_c.sql":  {Data: []byte("C")},
		"m/readme.txt":  {Data: []byte("not a migration")},
		"other/9_x.sql": {Data: []byte("elsewhere")},
	}
	ms, err := Load(fsys, "m/*.sql")
	if err != nil {
		t.Fatalf("Load() error = %v", err)
	}
	var got []string
	for _, m := range ms {
		got = append(got, m.Name+"="+m.SQL)
	}
	want := []string{"0001_a.sql=A", "0002_b.sql=B", "0010_c.sql=C"}
	if len(got) != len(want) {
		t.Fatalf("Load() = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Load()[%d] = %s, want %s", i, got[i], want[i])
		}
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		fsys fstest.MapFS
	}{
		{"no number", fstest.MapFS{"m/init.sql": {}}},
		{"zero version", fstest.MapFS{"m/0000_init.sql": {}}},
		{"shared version", fstest.MapFS{"m/0001_a.sql": {}, "m/001_b.sql": {}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Load(tt.fsys, "m/*.sql"); err == nil {
				t.Errorf("Load(%v) = nil error, want one", tt.fsys)
			}
		})
	}
}

func TestPending(t *testing.T) {
	ms := []Migration{{Version: 1}, {Version: 2}, {Version: 5}}
	tests := []struct {
		current int
		want    []int
		err     bool
	}{
		{0, []int{1, 2, 5}, false},
		{2, []int{5}, false},
		{5, nil, false},
		{6, nil, true},
	}
	for _, tt := range tests {
		got, err := Pending(ms, tt.current)
		var versions []int
		for _, m := range got {
			versions = append(versions, m.Version)
		}
		if (err != nil) != tt.err || fmt.Sprint(versions) != fmt.Sprint(tt.want) {
			t.Errorf("Pending(%d) = %v, %v; want %v (error %v)", tt.current, versions, err, tt.want, tt.err)
		}
	}
}

func TestStatus(t *testing.T) {
	ms := []Migration{{Version: 1, Name: "0001_a.sql"}, {Version: 2, Name: "0002_b.sql"}, {Version: 3, Name: "0003_c.sql"}}
	st, err := NewStatus(ms, 1)
	if err != nil {
		t.Fatalf("NewStatus: %v", err)
	}
	if got, want := st.String(), "schema at version 1 of 3; pending: 0002_b.sql, 0003_c.sql"; got != want {
		t.Errorf("before: %q, want %q", got, want)
	}
	st.Done(ms[1], false) // another process applied it
	st.Done(ms[2], true)
	if got, want := st.String(), "schema at version 3; applied: 0003_c.sql"; got != want {
		t.Errorf("after: %q, want %q", got, want)
	}
	if st, _ := NewStatus(ms, 3); st.String() != "schema at version 3: up to date" {
		t.Errorf("up to date: %q", st)
	}
	if _, err := NewStatus(ms, 4); err == nil {
		t.Error("NewStatus of a newer database: nil error, want one")
	}
}
