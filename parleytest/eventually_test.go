package parleytest_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"parley/parleytest"
)

// recorder is a testing.TB that records a Fatalf instead of ending the test.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) { r.failed = fmt.Sprintf(format, args...) }

// TestEventually checks that Eventually returns once the condition holds
// (polling it again after false), and fails with the message when it never
// does.
func TestEventually(t *testing.T) {
	var calls atomic.Int32
	r := &recorder{TB: t}
	parleytest.Eventually(r, time.Minute, func() bool { return calls.Add(1) == 3 }, "never %d", 3)
	if r.failed != "" || calls.Load() != 3 {
		t.Errorf("Eventually(true at the 3rd poll) failed %q after %d polls, want no failure after 3", r.failed, calls.Load())
	}
	r = &recorder{TB: t}
	parleytest.Eventually(r, 10*time.Millisecond, func() bool { return false }, "still not %s", "ready")
	if r.failed != "still not ready" {
		t.Errorf("Eventually(never) failure = %q, want %q", r.failed, "still not ready")
	}
}
