package main

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"
)

// TestVersion: parley version names the version and the Go toolchain (and
// the commit, when the build recorded one).
func TestVersion(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"version"}, &out, &out); err != nil {
		t.Fatalf("parley version: %v", err)
	}
	got := strings.TrimSpace(out.String())
	if !strings.HasPrefix(got, "parley "+version+" (") || !strings.Contains(got, runtime.Version()) {
		t.Errorf("parley version printed %q, want the version and %s", got, runtime.Version())
	}
}
