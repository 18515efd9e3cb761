package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// parleyBin is the `parley` binary built once by TestMain, "" when the
// suite does not run.
var parleyBin string

// TestMain builds cmd/parley into a temporary directory when the suite
// runs, so that every node is the real binary a user runs.
// PARLEY_CHAOS_BIN names a binary to use instead (to run this suite
// against another build, such as the main branch's).
func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	if bin := os.Getenv("PARLEY_CHAOS_BIN"); bin != "" && os.Getenv("PARLEY_TEST_CHAOS") == "1" {
		parleyBin = bin
	} else if os.Getenv("PARLEY_TEST_CHAOS") == "1" {
		dir, err := os.MkdirTemp("", "parley-chaos-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			return 1
		}
		defer os.RemoveAll(dir)
		bin := filepath.Join(dir, "parley")
		build := exec.Command("go", "build", "-o", bin, "parley/cmd/parley")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "chaos: go build parley/cmd/parley:", err)
			return 1
		}
		parleyBin = bin
	}
	return m.Run()
}

// needChaos skips t unless PARLEY_TEST_CHAOS=1.
func needChaos(t *testing.T) {
	t.Helper()
	if os.Getenv("PARLEY_TEST_CHAOS") != "1" || parleyBin == "" {
		t.Skip("the chaos suite runs only with PARLEY_TEST_CHAOS=1 (.ci/run sets it): it starts and kills real processes for minutes")
	}
}
