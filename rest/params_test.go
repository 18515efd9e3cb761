package rest

import (
	"net/url"
	"testing"
)

// TestParamsMatchURLValues: params answers Get and Has as url.Values
// does, on plain and awkward queries alike.
func TestParamsMatchURLValues(t *testing.T) {
	names := []string{"limit", "before", "after", "q", "cursor", "a b", "", "x"}
	for _, raw := range []string{
		"", "limit=50", "limit=50&before=101", "limit=&before", "limit=1&limit=2", "&&limit=3&",
		"before=1;limit=2&limit=3", "q=a+b", "q=%41%zz&limit=4", "a%20b=1&limit=5", "=1&limit", "x=1=2",
		"a=1&a=2&a=3&a=4&a=5&a=6&a=7&a=8&a=9&a=10&a=11&a=12&a=13&a=14&a=15&a=16&a=17&a=18&limit=9",
	} {
		u := &url.URL{Path: "/", RawQuery: raw}
		p, want := paramsOf(u), u.Query()
		for _, n := range names {
			if got, w := p.Get(n), want.Get(n); got != w {
				t.Errorf("query %q: Get(%q) = %q, want %q", raw, n, got, w)
			}
			if got, w := p.Has(n), want.Has(n); got != w {
				t.Errorf("query %q: Has(%q) = %v, want %v", raw, n, got, w)
			}
		}
	}
}
