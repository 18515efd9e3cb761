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

// TestProgressPhaseOneValue: a report made while a phase begins shows
// that phase's name with that phase's units, never the name of one with
// the units of the other (a drain's numbers under "measure": CI saw it).
func TestProgressPhaseOneValue(t *testing.T) {
	var mu sync.Mutex
	var bad []Progress
	o := Options{Progress: func(p Progress) {
		if (p.Phase == "drain") != (p.DoneUnit == "deliveries in") {
			mu.Lock()
			bad = append(bad, p)
			mu.Unlock()
		}
	}}
	r := newRun(Group, o)
	defer r.close()
	stop := make(chan struct{})
	reported := make(chan struct{})
	go func() {
		defer close(reported)
		for {
			select {
			case <-stop:
				return
			default:
				r.report(time.Now())
			}
		}
	}()
	for i := range 20000 {
		if i%2 == 0 {
			r.setPhaseUnits("measure", 10, time.Second, phaseUnits{done: "sent", rate: "deliveries/s"})
		} else {
			r.setPhaseUnits("drain", 10, time.Second, phaseUnits{done: "deliveries in", rate: "deliveries/s", upTo: true})
		}
	}
	close(stop)
	<-reported
	if len(bad) > 0 {
		t.Errorf("%d reports with one phase's name and another's units, the first %+v", len(bad), bad[0])
	}
}
