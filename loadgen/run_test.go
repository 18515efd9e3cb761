package loadgen

import (
	"sync"
	"testing"
	"time"
)

// TestReportTickBeforePhase: the ticker reports with the time its tick
// fired, which on a busy machine can come before a phase that began while
// the tick waited to run. The phase's elapsed time is then zero, not
// negative (a negative time made a --duration run's progress line count
// against users × loops instead of its time).
func TestReportTickBeforePhase(t *testing.T) {
	var mu sync.Mutex
	var got []Progress
	r := newRun(Group, Options{Progress: func(p Progress) {
		mu.Lock()
		got = append(got, p)
		mu.Unlock()
	}})
	defer r.close()
	tickFired := time.Now()
	r.setPhase("measure", 30_000_000, 1500*time.Millisecond)
	r.report(tickFired)
	mu.Lock()
	defer mu.Unlock()
	for _, p := range got {
		if p.Elapsed < 0 {
			t.Errorf("phase %q reported %v elapsed", p.Phase, p.Elapsed)
		}
	}
}
