package openapi

import (
	"net/url"
	"strings"
	"testing"
)

const testDoc = `
openapi: 3.1.0
paths:
  /api/things/{id}:
    get:
      responses:
        "200": {content: {application/json: {schema: {$ref: "#/components/schemas/Thing"}}}}
        "204": {description: none}
  /api/things/mine:
    get:
      responses:
        "200": {content: {application/json: {schema: {type: array, items: {type: integer, minimum: 1}}}}}
components:
  responses:
    NotFound: {content: {application/json: {schema: {type: object, required: [error]}}}}
    MethodNotAllowed: {content: {application/json: {schema: {type: object, required: [error]}}}}
  schemas:
    Thing:
      type: object
      required: [id, kind]
      additionalProperties: false
      properties:
        id: {type: string, minLength: 2}
        kind: {type: string, enum: [a, b]}
        next: {type: [string, "null"]}
        parent: {oneOf: [{$ref: "#/components/schemas/Thing"}, {type: "null"}]}
`

func TestCheckResponse(t *testing.T) {
	d, err := Parse([]byte(testDoc))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, method, path string
		status             int
		body               string
		want               string // a problem that must be reported; "" for none
	}{
		{"fits", "GET", "/api/things/t1", 200, `{"id":"t1","kind":"a","next":null,"parent":{"id":"t0","kind":"b"}}`, ""},
		{"missing required", "GET", "/api/things/t1", 200, `{"id":"t1"}`, `lacks the required "kind"`},
		{"unnamed property", "GET", "/api/things/t1", 200, `{"id":"t1","kind":"a","extra":1}`, `has "extra"`},
		{"enum", "GET", "/api/things/t1", 200, `{"id":"t1","kind":"c"}`, "is not one of"},
		{"type", "GET", "/api/things/t1", 200, `{"id":7,"kind":"a"}`, "want string"},
		{"type list", "GET", "/api/things/t1", 200, `{"id":"t1","kind":"a","next":3}`, "want string or null"},
		{"minLength", "GET", "/api/things/t1", 200, `{"id":"t","kind":"a"}`, "shorter"},
		{"oneOf", "GET", "/api/things/t1", 200, `{"id":"t1","kind":"a","parent":{"id":"t0"}}`, "oneOf"},
		{"literal wins", "GET", "/api/things/mine", 200, `[1,2]`, ""},
		{"items minimum", "GET", "/api/things/mine", 200, `[1,0]`, "below"},
		{"no body described", "GET", "/api/things/t1", 204, `{}`, "a body where"},
		{"status not described", "GET", "/api/things/t1", 500, `{}`, "status 500"},
		{"method not described", "POST", "/api/things/t1", 200, `{}`, "not described"},
		{"405 on any path", "POST", "/api/things/t1", 405, `{"error":{}}`, ""},
		{"404 on an unknown path", "GET", "/api/else", 404, `{"error":{}}`, ""},
		{"unknown path", "GET", "/api/else", 200, `{}`, "no path"},
	} {
		u, _ := url.Parse(tc.path)
		probs := d.CheckResponse(tc.method, u, tc.status, "application/json", []byte(tc.body))
		got := strings.Join(probs, "; ")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: CheckResponse = %q, want a problem with %q", tc.name, got, tc.want)
		}
	}
}
