package rest

import (
	"net/url"
	"strings"
)

// params reads a request's query as url.Values does (Get: the first
// value of a name, Has), without parsing it into a map when it is plain:
// no escapes, no '+' and no ';' (which url.ParseQuery refuses pair by
// pair), and few pairs. Any other query is parsed by url.ParseQuery.
type params struct {
	raw    string
	parsed url.Values // nil: raw is plain
}

func paramsOf(u *url.URL) params {
	raw := u.RawQuery
	if strings.ContainsAny(raw, "%+;") || strings.Count(raw, "&") > 16 {
		return params{parsed: u.Query()}
	}
	return params{raw: raw}
}

// lookup returns the first value of name and whether there is one.
func (p params) lookup(name string) (string, bool) {
	if p.parsed != nil {
		vs, ok := p.parsed[name]
		if !ok {
			return "", false
		}
		return vs[0], true
	}
	for q := p.raw; q != ""; {
		var pair string
		pair, q, _ = strings.Cut(q, "&")
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		if k == name {
			return v, true
		}
	}
	return "", false
}

func (p params) Get(name string) string { v, _ := p.lookup(name); return v }
func (p params) Has(name string) bool   { _, ok := p.lookup(name); return ok }
