package openapi

import (
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Doc is a parsed OpenAPI document.
type Doc struct {
	root  map[string]any
	paths map[string]map[string]any // path template -> lower-case method -> operation
}

// Parse reads an OpenAPI document in YAML (or JSON).
func Parse(data []byte) (*Doc, error) {
	var root map[string]any
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("parse openapi: %w", err)
	}
	d := &Doc{root: root, paths: map[string]map[string]any{}}
	paths, _ := root["paths"].(map[string]any)
	for p, item := range paths {
		ops := map[string]any{}
		m, _ := item.(map[string]any)
		for method, op := range m {
			if slices.Contains([]string{"get", "put", "post", "delete", "patch", "head", "options"}, method) {
				ops[method] = op
			}
		}
		d.paths[p] = ops
	}
	return d, nil
}

// Operations returns every described operation as "METHOD /path/{param}",
// sorted.
func (d *Doc) Operations() []string {
	var out []string
	for p, ops := range d.paths {
		for m := range ops {
			out = append(out, strings.ToUpper(m)+" "+p)
		}
	}
	slices.Sort(out)
	return out
}

// Describes reports whether the document describes method on the path
// template (as the router writes it: "/api/rooms/{id}").
func (d *Doc) Describes(method, template string) bool {
	_, ok := d.paths[template][strings.ToLower(method)]
	return ok
}

// Operation returns the operation object of method on template, or nil.
func (d *Doc) Operation(method, template string) map[string]any {
	op, _ := d.paths[template][strings.ToLower(method)].(map[string]any)
	return op
}

// Match returns the path template that a request path ("/api/rooms/r1/read")
// falls under, or "" when none does. A literal segment wins over a
// parameter, as in the router.
func (d *Doc) Match(path string) string {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	best, bestLiterals := "", -1
	for tpl := range d.paths {
		ts := strings.Split(strings.Trim(tpl, "/"), "/")
		if len(ts) != len(segs) {
			continue
		}
		literals, ok := 0, true
		for i, t := range ts {
			switch {
			case strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}"):
			case t == segs[i]:
				literals++
			default:
				ok = false
			}
		}
		if ok && literals > bestLiterals {
			best, bestLiterals = tpl, literals
		}
	}
	return best
}

// CheckResponse checks a response to method on the request URL: the
// operation is described, lists the status (405 fits every path: the
// router answers it for any method a path lacks, and 404 any unknown
// path), and a JSON body fits
// the status's schema. It returns the problems found, none when it fits.
func (d *Doc) CheckResponse(method string, u *url.URL, status int, contentType string, body []byte) []string {
	tpl := d.Match(u.Path)
	if tpl == "" {
		if status == 404 { // the router's answer to any unknown path
			return d.checkBody("#/components/responses/NotFound", d.ref("#/components/responses/NotFound"), contentType, body)
		}
		return []string{fmt.Sprintf("%s %s: no path of the document matches", method, u.Path)}
	}
	op := d.Operation(method, tpl)
	if op == nil {
		if status == 405 {
			return d.checkBody("#/components/responses/MethodNotAllowed", d.ref("#/components/responses/MethodNotAllowed"), contentType, body)
		}
		return []string{fmt.Sprintf("%s %s is not described", method, tpl)}
	}
	responses, _ := op["responses"].(map[string]any)
	resp, ok := responses[strconv.Itoa(status)]
	if !ok {
		if resp, ok = responses["default"]; !ok {
			return []string{fmt.Sprintf("%s %s: status %d is not described", method, tpl, status)}
		}
	}
	where := fmt.Sprintf("%s %s %d", method, tpl, status)
	return d.checkBody(where, resp, contentType, body)
}

func (d *Doc) checkBody(where string, resp any, contentType string, body []byte) []string {
	r := d.deref(resp)
	content, _ := r["content"].(map[string]any)
	if len(content) == 0 {
		if len(body) > 0 {
			return []string{where + ": a body where the document describes none"}
		}
		return nil
	}
	mt, _, _ := strings.Cut(contentType, ";")
	media, ok := content[strings.TrimSpace(mt)].(map[string]any)
	if !ok {
		return []string{fmt.Sprintf("%s: content type %q is not described", where, contentType)}
	}
	if mt != "application/json" {
		return nil
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return []string{fmt.Sprintf("%s: body is not JSON: %v", where, err)}
	}
	var errs []string
	d.validate(media["schema"], v, "$", &errs)
	for i := range errs {
		errs[i] = where + ": " + errs[i]
	}
	return errs
}

// ref resolves a local reference ("#/components/schemas/User").
func (d *Doc) ref(ref string) map[string]any {
	var cur any = d.root
	for _, part := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		m, _ := cur.(map[string]any)
		cur = m[part]
	}
	m, _ := cur.(map[string]any)
	return m
}

// deref follows $ref until an object without one.
func (d *Doc) deref(v any) map[string]any {
	m, _ := v.(map[string]any)
	for i := 0; i < 32 && m != nil; i++ {
		r, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		m = d.ref(r)
	}
	return m
}

// Validate checks v (decoded JSON) against a schema of the document, by
// reference ("#/components/schemas/Message"), and returns the problems.
func (d *Doc) Validate(ref string, v any) []string {
	var errs []string
	d.validate(map[string]any{"$ref": ref}, v, "$", &errs)
	return errs
}

// validate appends to errs, each prefixed with the path at, the ways v
// breaks schema.
func (d *Doc) validate(schema any, v any, at string, errs *[]string) {
	s := d.deref(schema)
	if s == nil {
		return
	}
	fail := func(format string, args ...any) { *errs = append(*errs, at+": "+fmt.Sprintf(format, args...)) }
	if alts, ok := s["oneOf"].([]any); ok {
		if n := d.fits(alts, v, at); n != 1 {
			fail("fits %d of oneOf's %d schemas, want 1", n, len(alts))
		}
		return
	}
	if t, ok := s["type"]; ok {
		types := schemaTypes(t)
		if !slices.Contains(types, typeOf(v)) && !(typeOf(v) == "integer" && slices.Contains(types, "number")) {
			fail("is %s %v, want %s", typeOf(v), short(v), strings.Join(types, " or "))
			return
		}
	}
	if enum, ok := s["enum"].([]any); ok && !slices.ContainsFunc(enum, func(e any) bool { return fmt.Sprint(e) == fmt.Sprint(v) }) {
		fail("%v is not one of %v", short(v), enum)
	}
	switch v := v.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		for _, r := range asList(s["required"]) {
			if _, ok := v[r]; !ok {
				fail("lacks the required %q", r)
			}
		}
		for k, x := range v {
			if p, ok := props[k]; ok {
				d.validate(p, x, at+"."+k, errs)
			} else if ap, ok := s["additionalProperties"].(bool); ok && !ap {
				fail("has %q, which the schema does not name", k)
			}
		}
	case []any:
		if items, ok := s["items"]; ok {
			for i, x := range v {
				d.validate(items, x, at+"["+strconv.Itoa(i)+"]", errs)
			}
		}
	case string:
		n := utf8.RuneCountInString(v)
		if lo, ok := num(s["minLength"]); ok && float64(n) < lo {
			fail("is shorter than %v", lo)
		}
		if hi, ok := num(s["maxLength"]); ok && float64(n) > hi {
			fail("is longer than %v", hi)
		}
		if p, ok := s["pattern"].(string); ok {
			if re, err := regexp.Compile(p); err != nil || !re.MatchString(v) {
				fail("%q does not match %s", v, p)
			}
		}
	case float64:
		if lo, ok := num(s["minimum"]); ok && v < lo {
			fail("%v is below %v", v, lo)
		}
		if hi, ok := num(s["maximum"]); ok && v > hi {
			fail("%v is above %v", v, hi)
		}
	}
}

// fits counts the schemas of alts (a oneOf) that v satisfies.
func (d *Doc) fits(alts []any, v any, at string) int {
	n := 0
	for _, alt := range alts {
		var sub []string
		d.validate(alt, v, at, &sub)
		if len(sub) == 0 {
			n++
		}
	}
	return n
}

// schemaTypes lists the names a schema's "type" allows: one string or a
// list of them.
func schemaTypes(t any) []string {
	var types []string
	switch t := t.(type) {
	case string:
		types = []string{t}
	case []any:
		for _, x := range t {
			types = append(types, fmt.Sprint(x))
		}
	}
	return types
}

func typeOf(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case float64:
		if v == math.Trunc(v) {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func asList(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, x := range l {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

func num(v any) (float64, bool) {
	switch v := v.(type) {
	case int:
		return float64(v), true
	case float64:
		return v, true
	}
	return 0, false
}

func short(v any) string {
	s := fmt.Sprint(v)
	if len(s) > 60 {
		s = s[:60] + "…"
	}
	return s
}
