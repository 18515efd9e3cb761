package parleytest

import (
	"testing"
	"time"
)

// Eventually polls cond until it holds, and fails the test with the
// message (t.Fatalf, so call it from the test's goroutine) if it still
// does not after timeout. The polls back off from 1 ms to 50 ms, so a
// condition that holds soon is seen soon and one that takes seconds costs
// little CPU. The timeout is a bound on a hang, not a timing the test
// asserts: pick it generous.
func Eventually(t testing.TB, timeout time.Duration, cond func() bool, format string, args ...any) {
	t.Helper()
	if !Poll(timeout, cond) {
		t.Fatalf(format, args...)
	}
}

// Poll polls cond as Eventually does and reports whether it held before
// timeout, for a caller that fails in its own way (from another goroutine,
// or with t.Errorf).
func Poll(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pause)
	}
}
