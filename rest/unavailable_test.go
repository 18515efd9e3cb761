package rest

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"parley"
)

// TestUnavailableRetryAfter: an unavailable error (a store outage, a full
// disk) is a 503 with Retry-After; other errors have no Retry-After from
// writeError.
func TestUnavailableRetryAfter(t *testing.T) {
	tests := []struct {
		err    error
		status int
		retry  string
	}{
		{parley.Errorf(parley.CodeUnavailable, "the server's storage is full; send again later with the same client-id"), http.StatusServiceUnavailable, retryUnavailable},
		{parley.Errorf(parley.CodeNotFound, "no such room"), http.StatusNotFound, ""},
	}
	for _, tc := range tests {
		rec := httptest.NewRecorder()
		writeError(rec, tc.err)
		if rec.Code != tc.status || rec.Header().Get("Retry-After") != tc.retry {
			t.Errorf("writeError(%v): %d, Retry-After %q; want %d, %q", tc.err, rec.Code, rec.Header().Get("Retry-After"), tc.status, tc.retry)
		}
	}
}
