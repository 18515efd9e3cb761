package schema

import "testing"

// TestStatusString: parley migrate's line names the version, the newest
// while some are pending, and every migration applied or pending, both
// when a migration failed half-way.
func TestStatusString(t *testing.T) {
	tests := []struct {
		name string
		st   Status
		want string
	}{
		{"plan", Status{Version: 1, Latest: 3, Pending: []string{"0002_b.sql", "0003_c.sql"}},
			"schema at version 1 of 3; pending: 0002_b.sql, 0003_c.sql"},
		{"applied", Status{Version: 3, Latest: 3, Applied: []string{"0002_b.sql", "0003_c.sql"}},
			"schema at version 3; applied: 0002_b.sql, 0003_c.sql"},
		{"failed half-way", Status{Version: 2, Latest: 3, Applied: []string{"0002_b.sql"}, Pending: []string{"0003_c.sql"}},
			"schema at version 2 of 3; applied: 0002_b.sql; pending: 0003_c.sql"},
		{"up to date", Status{Version: 3, Latest: 3}, "schema at version 3: up to date"},
		{"empty", Status{}, "schema at version 0: up to date"},
	}
	for _, tt := range tests {
		if got := tt.st.String(); got != tt.want {
			t.Errorf("%s: String() = %q, want %q", tt.name, got, tt.want)
		}
	}
}
