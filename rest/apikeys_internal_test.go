package rest

import (
	"strings"
	"testing"

	"parley/rest/openapi"
)

// TestKeyRoutesDescribeTheKeyLimit: every route an API key may call can
// answer 429 (KeyLimit), so openapi.yaml must say so for each, the
// incoming webhook too. A route given to keys without it fails here.
func TestKeyRoutesDescribeTheKeyLimit(t *testing.T) {
	doc, err := openapi.Parse(OpenAPI)
	if err != nil {
		t.Fatal(err)
	}
	patterns := []string{"POST /api/hooks/{key}"}
	for p := range keyScopes {
		patterns = append(patterns, p)
	}
	for _, p := range patterns {
		method, path, _ := strings.Cut(p, " ")
		op := doc.Operation(method, path)
		if op == nil {
			t.Errorf("%s is not described", p)
			continue
		}
		if rs, _ := op["responses"].(map[string]any); rs["429"] == nil {
			t.Errorf("%s: an API key's call may be 429, and the document does not say so", p)
		}
	}
}
