package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestHelpExitsZero: asking for help is not an error: serve, migrate and
// bench -h print their flags, each with its environment variable, and
// the process exits 0.
func TestHelpExitsZero(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"serve", []string{"serve", "--help"}, []string{"--addr", "PARLEY_ADDR", "--store", "PARLEY_STORE", "PARLEY_LOG_FORMAT", "PARLEY_CONFIG"}},
		{"serve -h", []string{"serve", "-h"}, []string{"PARLEY_MAX_BODY"}},
		{"migrate", []string{"migrate", "-h"}, []string{"--dry-run", "PARLEY_DRY_RUN", "PARLEY_STORE"}},
		{"bench", []string{"bench", "group", "-h"}, []string{"--users", "PARLEY_USERS"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(context.Background(), tc.args, &out, &out)
			if code := exitCode(err); code != 0 {
				t.Errorf("parley %s: exit code %d (err %v), want 0", strings.Join(tc.args, " "), code, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("parley %s printed no %q:\n%s", strings.Join(tc.args, " "), w, out.String())
				}
			}
		})
	}
	if code := exitCode(run(context.Background(), []string{"serve", "--no-such-flag"}, &bytes.Buffer{}, &bytes.Buffer{})); code != 2 {
		t.Errorf("parley serve --no-such-flag: exit code %d, want 2", code)
	}
}

// TestVersionFlags: --version and -v are the version command.
func TestVersionFlags(t *testing.T) {
	var want bytes.Buffer
	if err := run(context.Background(), []string{"version"}, &want, &want); err != nil {
		t.Fatal(err)
	}
	for _, arg := range []string{"--version", "-version", "-v"} {
		var out bytes.Buffer
		if err := run(context.Background(), []string{arg}, &out, &out); err != nil || out.String() != want.String() {
			t.Errorf("parley %s = %q, %v; want %q", arg, out.String(), err, want.String())
		}
	}
}

// TestHelpNamesNoOutsideDocument: the help points at the repository's docs, not at a
// design document the repository does not hold.
func TestHelpNamesNoOutsideDocument(t *testing.T) {
	for name, text := range map[string]string{"usage": usage, "benchUsage": benchUsage, "serveUsage": serveUsage} {
		if strings.Contains(text, "§") || strings.Contains(text, "design") {
			t.Errorf("%s refers to a document outside the repository:\n%s", name, text)
		}
	}
}

// TestBenchHelpPerScenario: a scenario's help lists the flags it takes
// and none of the others'.
func TestBenchHelpPerScenario(t *testing.T) {
	var out bytes.Buffer
	run(context.Background(), []string{"bench", "seats", "-h"}, &out, &out)
	for _, want := range []string{"--seats", "--users", "--loops", "--duration"} {
		if !strings.Contains(out.String(), want+" ") {
			t.Errorf("bench seats -h lacks %s:\n%s", want, out.String())
		}
	}
	for _, other := range []string{"--interval", "--payload", "--target", "--drain", "--page", "--connections", "--rooms"} {
		if strings.Contains(out.String(), other+" ") {
			t.Errorf("bench seats -h lists %s, which does not apply to it", other)
		}
	}
}
