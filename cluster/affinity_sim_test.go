package cluster_test

// A discrete-event model of one group room's send path in cluster mode,
// today (every node commits its own sends; the nodes' transactions take
// the room's row in turn) and with room-affine writers (one owner node
// commits the room's sends; the others forward them), with the constants
// SCALING.md measured or took from docs/perf-log.md. It estimates
// latency; it checks nothing and asserts no timing, and runs only when
// asked:
//
//	PARLEY_AFFINITY_SIM=1 go test -count=1 -run TestAffinitySim -v ./cluster/
//
// Time is virtual and the random source seeded, so each run prints the
// same tables.

import (
	"container/heap"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
)

// dist is a shifted log-normal: p50 and p99 in seconds (p99 ≥ p50 > 0).
type dist struct{ p50, p99 float64 }

func (d dist) draw(r *rand.Rand) float64 {
	if d.p99 <= d.p50 {
		return d.p50
	}
	sigma := math.Log(d.p99/d.p50) / 2.326
	return d.p50 * math.Exp(sigma*r.NormFloat64())
}

// profile is a set of constants (SCALING.md, "Constants").
type profile struct {
	name      string
	tx        dist    // one send transaction with one message, one client: BEGIN … COMMIT in one pipeline
	perMsg    float64 // each further message of a batch adds to the transaction
	rtt       float64 // the part of tx not under the row lock (the pipeline's trip to PostgreSQL and back)
	redis     dist    // the hot data's write of a commit (redis.HotStore), one pipelined round trip
	hop       dist    // a batch through RabbitMQ to another node's relay
	direct    dist    // a forwarded send over a direct connection between nodes
	gapRead   dist    // the relay's read of a gap from the store
	dispatch  float64 // the hub's dispatch and hand-off of a message
	perDeliv  float64 // node CPU a delivery
	clientLeg float64 // client → server plus server → client, on loopback
}

var profiles = []profile{
	{
		// Quiet: docs/perf-log.md sessions 9 and 14 (pgbench 0.90 ms with one
		// client, 1.82 ms with three on one row; Redis write p50 < 0.5 ms in
		// 60%, < 1 ms in 90%; other nodes' messages 1.5-2 ms later than local);
		// the p99s, the hop's split from the Redis write and the gap read are
		// guesses.
		name: "quiet", tx: dist{0.90e-3, 3.0e-3}, perMsg: 15e-6, rtt: 0.15e-3,
		redis: dist{0.40e-3, 2.0e-3}, hop: dist{0.60e-3, 4.0e-3}, direct: dist{0.10e-3, 0.5e-3},
		gapRead: dist{1.0e-3, 5e-3}, dispatch: 0.5e-3, perDeliv: 2e-6, clientLeg: 0.5e-3,
	},
	{
		// Busy: measured for SCALING.md on 2026-12-06 at load average 8-15,
		// the first runs (pgbench send1 -c 1 p50 3.14 ms, p99 23.6; 32
		// messages 3.72 ms; HotStore write p50 0.13 ms, p99 5.4; RabbitMQ hop
		// p50 0.24 ms, p99 12.4; PING p50 0.06, p99 2.6); the gap read is a
		// guess.
		name: "busy", tx: dist{3.14e-3, 23.6e-3}, perMsg: 19e-6, rtt: 0.3e-3,
		redis: dist{0.13e-3, 5.4e-3}, hop: dist{0.24e-3, 12.4e-3}, direct: dist{0.06e-3, 2.6e-3},
		gapRead: dist{3.0e-3, 20e-3}, dispatch: 0.5e-3, perDeliv: 2e-6, clientLeg: 0.5e-3,
	},
}

// mode is how a room's sends reach the store.
type mode int

const (
	today        mode = iota // each node commits its own sends
	affineDirect             // the owner commits; others forward over a direct connection
	affineBroker             // the owner commits; others forward through RabbitMQ
)

func (m mode) String() string {
	return [...]string{"today", "affine, direct hop", "affine, broker hop"}[m]
}

type simSend struct {
	at      float64 // the client sent it
	origin  int     // the node the client is on
	seq     int
	receipt float64
}

type simEvent struct {
	at   float64
	kind int // evArrive, evCommitted, evRedisDone
	node int
	send *simSend   // evArrive
	b    []*simSend // evCommitted: the batch; evRedisDone: every send the write covered
}

const (
	evArrive = iota
	evCommitted
	evRedisDone
)

type evHeap []*simEvent

func (h evHeap) Len() int           { return len(h) }
func (h evHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h evHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *evHeap) Push(x any)        { *h = append(*h, x.(*simEvent)) }
func (h *evHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

type simNode struct {
	queue     []*simSend // sends waiting for the writer
	writing   bool
	redisBusy bool
	toRedis   [][]*simSend // committed batches waiting for the hot data's write
}

type simResult struct {
	msgs, offered     float64 // committed and offered messages/s
	receipt, delivery []float64
	batch             float64 // mean messages a commit
	rowBusy           float64 // share of time the room's row is locked
}

// simulate runs one room of members spread over nodes, each member sending
// every U(1,3)/k s, for dur seconds (the first second not counted).
func simulate(p profile, m mode, nodes, members int, k, dur float64, seed uint64) simResult {
	r := rand.New(rand.NewPCG(seed, 7))
	var sends []*simSend
	for u := range members {
		t := r.Float64() * 2 / k
		for t < dur {
			sends = append(sends, &simSend{at: t, origin: u % nodes})
			t += (1 + 2*r.Float64()) / k
		}
	}
	slices.SortFunc(sends, func(a, b *simSend) int {
		if a.at < b.at {
			return -1
		}
		return 1
	})
	const owner = 0
	h := &evHeap{}
	for _, s := range sends {
		to, at := s.origin, s.at+p.clientLeg/2
		if m != today && s.origin != owner {
			to = owner
			if m == affineDirect {
				at += p.direct.draw(r)
			} else {
				at += p.hop.draw(r)
			}
		}
		heap.Push(h, &simEvent{at: at, kind: evArrive, node: to, send: s})
	}
	ns := make([]simNode, nodes)
	rowFree := 0.0 // the room's row: FIFO, free from this time on
	rowBusy := 0.0
	nextSeq := 1
	var commits, committed int
	// arrivals[node][seq]: when the message reached that node's relay.
	bySeq := []*simSend{nil}
	arrive := make([][]float64, nodes)
	const maxBatch = 1024
	startBatch := func(node int, now float64) {
		n := &ns[node]
		b := n.queue[:min(len(n.queue), maxBatch)]
		n.queue = slices.Clone(n.queue[len(b):])
		n.writing = true
		// The pipeline reaches PostgreSQL, waits for the row, holds it
		// through the statements and the WAL sync, and the answer comes
		// back.
		reach := now + p.rtt/2
		hold := p.tx.draw(r) - p.rtt + p.perMsg*float64(len(b)-1)
		grant := math.Max(reach, rowFree)
		rowFree = grant + hold
		rowBusy += hold
		for _, s := range b {
			s.seq = nextSeq
			nextSeq++
			bySeq = append(bySeq, s)
		}
		commits++
		committed += len(b)
		heap.Push(h, &simEvent{at: rowFree + p.rtt/2, kind: evCommitted, node: node, b: b})
	}
	startRedis := func(node int, now float64) {
		n := &ns[node]
		var all []*simSend
		for _, b := range n.toRedis {
			all = append(all, b...)
		}
		n.toRedis = nil
		n.redisBusy = true
		heap.Push(h, &simEvent{at: now + p.redis.draw(r), kind: evRedisDone, node: node, b: all})
	}
	setArrive := func(node, seq int, at float64) {
		for len(arrive[node]) <= seq {
			arrive[node] = append(arrive[node], math.Inf(1))
		}
		arrive[node][seq] = at
	}
	for h.Len() > 0 {
		e := heap.Pop(h).(*simEvent)
		n := &ns[e.node]
		switch e.kind {
		case evArrive:
			n.queue = append(n.queue, e.send)
			if !n.writing {
				startBatch(e.node, e.at)
			}
		case evCommitted:
			for _, s := range e.b {
				setArrive(e.node, s.seq, e.at) // the node's own relay has it at once
			}
			n.toRedis = append(n.toRedis, e.b)
			if !n.redisBusy {
				startRedis(e.node, e.at)
			}
			n.writing = false
			if len(n.queue) > 0 {
				startBatch(e.node, e.at)
			}
		case evRedisDone:
			// RECEIPTs of this node's sends; one publish per other node.
			hops := make([]float64, nodes)
			for j := range nodes {
				if j != e.node {
					hops[j] = e.at + p.hop.draw(r)
				}
			}
			for _, s := range e.b {
				for j := range nodes {
					if j != e.node {
						setArrive(j, s.seq, hops[j])
					}
				}
				if s.origin == e.node {
					s.receipt = e.at + p.clientLeg/2
				} else {
					s.receipt = hops[s.origin] + p.clientLeg/2 // affine: the origin hears of it by the owner's batch
				}
			}
			n.redisBusy = false
			if len(n.toRedis) > 0 {
				startRedis(e.node, e.at)
			}
		}
	}
	res := simResult{offered: float64(len(sends)) / dur, batch: float64(committed) / float64(commits), rowBusy: rowBusy / rowFree}
	last := 0.0
	for _, s := range sends {
		if s.at >= 1 {
			res.receipt = append(res.receipt, s.receipt-s.at)
		}
		last = math.Max(last, s.receipt)
	}
	res.msgs = float64(len(sends)) / last
	// Each node delivers in seq order; a held message has the gap read
	// from the store at once, so seq s is there by the earliest arrival of
	// any later seq plus a store read. Then the node's fan-out, one message
	// after another, to its share of the members.
	per := float64(members) / float64(nodes)
	for j := range nodes {
		a := arrive[j]
		for len(a) < len(bySeq) {
			a = append(a, math.Inf(1))
		}
		eff := slices.Clone(a)
		suffix := math.Inf(1)
		for s := len(a) - 1; s >= 1; s-- {
			if !math.IsInf(suffix, 1) {
				eff[s] = math.Min(eff[s], suffix+p.gapRead.draw(r))
			}
			suffix = math.Min(suffix, a[s])
		}
		prev, free := 0.0, 0.0
		for s := 1; s < len(a); s++ {
			d := math.Max(eff[s], prev)
			prev = d
			start := math.Max(d+p.dispatch, free) // the hand-off is a wait, not work of the fan-out
			free = start + per*p.perDeliv
			if bySeq[s].at >= 1 {
				// a recipient at a random place in the fan-out
				res.delivery = append(res.delivery, start+r.Float64()*per*p.perDeliv+p.clientLeg/2-bySeq[s].at)
			}
		}
	}
	return res
}

func quantile(xs []float64, q float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// failover estimates by Monte Carlo the time a room cannot commit when its
// owner dies: the owner renews its lease every renew s (TTL ttl), the
// others look at it every poll s, and the takeover is one transaction
// (the epoch's bump); a send forwarded meanwhile is sent again, with its
// client id, to the new owner.
func failover(p profile, ttl, renew, poll float64, trials int, r *rand.Rand) (p50, p99, max float64) {
	var w []float64
	for range trials {
		death := 100 + r.Float64()*10
		lastRenew := math.Floor(death/renew) * renew
		expiry := lastRenew + ttl
		phase := r.Float64() * poll
		seen := math.Ceil((expiry-phase)/poll)*poll + phase
		takeover := seen + p.tx.draw(r) // UPDATE rooms SET owner_epoch = owner_epoch + 1 … WHERE lease_until < now()
		resend := p.direct.draw(r) + p.tx.draw(r)
		w = append(w, takeover+resend-death)
	}
	return quantile(w, .5), quantile(w, .99), slices.Max(w)
}

func TestAffinitySim(t *testing.T) {
	if os.Getenv("PARLEY_AFFINITY_SIM") == "" {
		t.Skip("PARLEY_AFFINITY_SIM is not set: a model for SCALING.md, not a test")
	}
	const members, dur = 250, 21.0
	for _, p := range profiles {
		fmt.Printf("\nprofile %s: one room of %d members, seed 002's load × k, %.0f s (the first not counted); ms\n", p.name, members, dur)
		fmt.Println("| nodes | k (msgs/s) | mode | receipt p50 / p99 | delivery p50 / p99 | msgs a commit | row locked |")
		fmt.Println("|---:|---:|---|---|---|---:|---:|")
		for _, nodes := range []int{3, 6, 12} {
			for _, k := range []float64{1, 10, 40} {
				for _, m := range []mode{today, affineDirect, affineBroker} {
					res := simulate(p, m, nodes, members, k, dur, 1)
					fmt.Printf("| %d | %g (%.0f) | %v | %.2f / %.2f | %.2f / %.2f | %.1f | %.0f%% |\n", nodes, k, res.offered, m,
						1e3*quantile(res.receipt, .5), 1e3*quantile(res.receipt, .99),
						1e3*quantile(res.delivery, .5), 1e3*quantile(res.delivery, .99), res.batch, 100*res.rowBusy)
				}
			}
		}
		r := rand.New(rand.NewPCG(2, 7))
		fmt.Println("\nfailover: a room's commits stop, from the owner's death to the first commit of a resent send; s")
		fmt.Println("| lease TTL | renew | poll | p50 | p99 | max |")
		fmt.Println("|---:|---:|---:|---:|---:|---:|")
		for _, c := range [][3]float64{{2, 0.5, 0.25}, {5, 1, 0.5}, {1, 0.25, 0.1}} {
			a, b, x := failover(p, c[0], c[1], c[2], 100000, r)
			fmt.Printf("| %g | %g | %g | %.2f | %.2f | %.2f |\n", c[0], c[1], c[2], a, b, x)
		}
	}
	fmt.Println(strings.Repeat("-", 20))
}
