package loadgen

import (
	"context"
	"time"
)

// The Parley nodes' own counters a messaging run reads from /metrics
// before and after it, for publishes per message and deliveries.

// brokerCounters reads the fan-out counters of every Parley node, or nil.
func (m *msgRun) brokerCounters(ctx context.Context) map[string]float64 {
	if m.r.o.Target != TargetParley {
		return nil
	}
	sum := map[string]float64{}
	for _, n := range m.r.nodes {
		vals, err := n.metrics(ctx)
		if err != nil {
			return nil
		}
		for k, v := range vals {
			sum[k] += v
		}
	}
	return sum
}

// settledCounters waits (at most 10 s) until the nodes' broker publishes
// stop moving for half a second, then returns the counters (nil as
// brokerCounters).
func (m *msgRun) settledCounters(ctx context.Context) map[string]float64 {
	last := m.brokerCounters(ctx)
	if last == nil {
		return nil
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
			return last
		case <-time.After(500 * time.Millisecond):
		}
		now := m.brokerCounters(ctx)
		if now == nil || now["parley_broker_publishes_total"] == last["parley_broker_publishes_total"] {
			return now
		}
		last = now
	}
	return last
}

func delta(before, after map[string]float64, name string) (float64, bool) {
	a, ok := after[name]
	if !ok || before == nil {
		return 0, false
	}
	return a - before[name], true
}
