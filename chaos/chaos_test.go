package chaos

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"parley"
	"parley/postgres/pgtest"
	"parley/servicetest"
)

// TestChaos runs each fault case in turn. Every case is bounded: it waits
// on events with deadlines, and fails (rather than hangs) when the
// cluster does not recover in time.
func TestChaos(t *testing.T) {
	needChaos(t)
	cases := []struct {
		name string
		run  func(*testing.T)
	}{
		{"sigkill", testSingleNodeSIGKILL},
		{"rabbitmq", testRabbitMQStop},
		{"nodedeath", testNodeDeath},
		{"redis", testRedisRestart},
		{"quietbroker", testNodeDeathWhileBrokerDown},
		{"postgres", testPostgresStop},
		{"slowconsumers", testSlowConsumers},
		{"sigterm", testSIGTERM},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			c.run(t)
			t.Logf("case %s took %v", c.name, time.Since(start).Round(100*time.Millisecond))
		})
	}
}

// env is the services of one cluster case: a private Redis always (it is
// cheap), a private RabbitMQ or PostgreSQL when the case stops it, and
// otherwise the shared ones of PARLEY_TEST_AMQP and PARLEY_TEST_POSTGRES
// (a schema and node ids of the case's own).
type env struct {
	t      *testing.T
	id     string
	store  string
	broker string
	redis  *servicetest.Redis
	rabbit *servicetest.Rabbit
	pg     *servicetest.Postgres
}

// newEnv checks for the tools and variables the case needs (skipping if
// one is missing) before it starts anything.
func newEnv(t *testing.T, privateRabbit, privatePostgres bool) *env {
	t.Helper()
	servicetest.NeedTools(t, "redis-server")
	if privateRabbit {
		servicetest.NeedTools(t, "rabbitmq-server", "rabbitmqctl")
	} else if os.Getenv("PARLEY_TEST_AMQP") == "" {
		t.Skip("PARLEY_TEST_AMQP is not set: this case uses the shared RabbitMQ (.ci/run sets it)")
	}
	if privatePostgres {
		servicetest.NeedTools(t, "pg_createcluster", "pg_ctlcluster", "pg_dropcluster")
	} else if os.Getenv("PARLEY_TEST_POSTGRES") == "" {
		t.Skip("PARLEY_TEST_POSTGRES is not set: this case uses the shared PostgreSQL (.ci/run sets it)")
	}
	e := &env{t: t, id: parley.NewID()[:6]}
	e.redis = servicetest.StartRedis(t)
	if privatePostgres {
		e.pg = servicetest.StartPostgres(t)
		e.store = e.pg.URL()
	} else {
		e.store = pgtest.Schema(t)
	}
	if privateRabbit {
		e.rabbit = servicetest.StartRabbit(t)
		e.broker = e.rabbit.URL()
	} else {
		e.broker = os.Getenv("PARLEY_TEST_AMQP")
	}
	return e
}

// node starts a cluster node named name-<case id>.
func (e *env) node(name string, extra ...string) *node {
	e.t.Helper()
	id := name + "-" + e.id
	return startNode(e.t, id, clusterArgs(id, e.store, e.broker, e.redis.URL(), "chaos:"+e.id+":", extra...)...)
}

// stream is the load of a case: senders and subscribers on their own
// goroutines.
type stream struct {
	t       *testing.T
	l       *ledger
	senders []*sender
	subs    []*subscriber

	stop      chan struct{} // closed: senders start no new message
	abort     context.CancelFunc
	subCancel context.CancelFunc
	sendersWG sync.WaitGroup
	subsWG    sync.WaitGroup
	started   time.Time
}

// newStream returns a stream whose senders and subscribers the case adds
// with addSender and addSubscriber, then starts with start.
func newStream(t *testing.T) *stream {
	s := &stream{t: t, l: newLedger(), stop: make(chan struct{})}
	return s
}

// addSender adds a sender of u to room at rate messages/s with pad extra
// body bytes, on the first of nodes that takes it.
func (s *stream) addSender(name string, u user, room string, rate float64, pad int, nodes ...*node) *sender {
	snd := &sender{name: name, token: u.token, room: room, nodes: nodes, rate: rate, pad: pad, l: s.l, stop: s.stop}
	s.senders = append(s.senders, snd)
	return snd
}

// addSubscribers adds n subscribers of u to room on the first of nodes.
func (s *stream) addSubscribers(prefix string, n int, u user, room string, nodes ...*node) []*subscriber {
	var out []*subscriber
	for i := range n {
		sub := newSubscriber(fmt.Sprintf("%s%d", prefix, i), u.token, room, nodes...)
		out = append(out, sub)
	}
	s.subs = append(s.subs, out...)
	return out
}

// start subscribes every subscriber (waiting for each SUBSCRIBE's
// receipt), then starts the senders.
func (s *stream) start() {
	s.t.Helper()
	subCtx, subCancel := context.WithCancel(context.Background())
	s.subCancel = subCancel
	s.t.Cleanup(s.halt)
	if err := subscribeAll(subCtx, &s.subsWG, s.subs); err != nil {
		s.t.Fatalf("subscribe: %v", err)
	}
	abortCtx, abort := context.WithCancel(context.Background())
	s.abort = abort
	s.started = time.Now()
	for _, snd := range s.senders {
		snd.abort = abortCtx
		s.sendersWG.Go(snd.run)
	}
}

// finish stops the senders (each finishes, within 30 s, the message it
// is sending), waits at most drain until every subscriber has read the
// last receipted seq, and stops the subscribers. It returns that seq and
// the subscribers still behind.
func (s *stream) finish(drain time.Duration) (int64, []string) {
	close(s.stop)
	done := make(chan struct{})
	go func() { s.sendersWG.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		s.t.Errorf("senders still waiting for a receipt 30 s after the end: given up")
		s.abort()
		<-done
	}
	s.abort()
	n, _ := s.l.maxSeq()
	behind := waitSeq(s.subs, n, drain)
	s.subCancel()
	s.subsWG.Wait()
	return n, behind
}

// halt stops everything (cleanup).
func (s *stream) halt() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	if s.abort != nil {
		s.abort()
	}
	if s.subCancel != nil {
		s.subCancel()
	}
	s.sendersWG.Wait()
	s.subsWG.Wait()
}

// waitReceipts waits until the senders have n receipts in all, at most d.
func (s *stream) waitReceipts(n int, d time.Duration) {
	s.t.Helper()
	deadline := time.Now().Add(d)
	for {
		if _, got := s.l.maxSeq(); got >= n {
			return
		}
		if time.Now().After(deadline) {
			_, got := s.l.maxSeq()
			s.t.Fatalf("%d receipts after %v, want %d (refusals: %s)", got, d, n, s.l.refusalSummary())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
