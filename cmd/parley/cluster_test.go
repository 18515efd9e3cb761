package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"parley"
	"parley/parleytest"
	"parley/postgres/pgtest"
	"parley/redis"
	"parley/servicetest"
	"parley/stomp"

	goredis "github.com/redis/go-redis/v9"
)

// clusterEnv is the services of the cluster tests, from PARLEY_TEST_*.
type clusterEnv struct {
	store, broker, redis, prefix string
}

// needCluster returns the services or skips the test.
func needCluster(t *testing.T) clusterEnv {
	t.Helper()
	env := clusterEnv{
		store:  os.Getenv("PARLEY_TEST_POSTGRES"),
		broker: os.Getenv("PARLEY_TEST_AMQP"),
		redis:  os.Getenv("PARLEY_TEST_REDIS"),
		prefix: os.Getenv("PARLEY_TEST_REDIS_PREFIX"),
	}
	if env.store == "" || env.broker == "" || env.redis == "" {
		t.Skip("cluster tests need PARLEY_TEST_POSTGRES, PARLEY_TEST_AMQP and PARLEY_TEST_REDIS (.ci/run sets them)")
	}
	if env.prefix == "" {
		env.prefix = "parleytest:"
	}
	// A schema and a key prefix of the test's own.
	id := parley.NewID()[:10]
	env.store = pgtest.Schema(t)
	env.prefix += "cluster:" + id + ":"
	t.Cleanup(func() { deleteRedisPrefix(t, env) })
	return env
}

// deleteRedisPrefix deletes the test's keys: Redis "flushed" without
// touching anybody else's data.
func deleteRedisPrefix(t *testing.T, env clusterEnv) {
	rdb := envRedis(t, env)
	ctx := context.Background()
	iter := rdb.Scan(ctx, 0, env.prefix+"*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if len(keys) > 0 {
		rdb.Del(ctx, keys...)
	}
}

// clusterConfig is the configuration of a cluster node of the tests: the
// defaults of parley serve, as MustOpenMain has them, with the services of
// env and a node id from name.
func clusterConfig(t *testing.T, env clusterEnv, name string) Config {
	cfg := serveDefaults()
	cfg.Addr, cfg.Data, cfg.TokenTTL, cfg.KDF = "127.0.0.1:0", t.TempDir(), time.Hour, testKDF
	cfg.Store, cfg.Broker, cfg.Redis, cfg.RedisPrefix = env.store, env.broker, env.redis, env.prefix
	cfg.NodeID, cfg.PresenceTTL = name+"-"+parley.NewID()[:6], 3*time.Second
	return cfg
}

// startNode starts one cluster node on 127.0.0.1:0 and returns it, each
// opt changing its configuration first; close stops it (also at the end
// of the test).
func startNode(t *testing.T, env clusterEnv, name string, opts ...func(*Config)) *Main {
	t.Helper()
	m := &Main{Config: clusterConfig(t, env, name)}
	m.Config.StompSendRate, m.Config.StompQueue = 1000, 4096
	for _, opt := range opts {
		opt(&m.Config)
	}
	if err := m.Open(context.Background()); err != nil {
		t.Fatalf("open node %s: %v", name, err)
	}
	t.Cleanup(func() { closeNode(t, m) })
	waitReady(t, m)
	return m
}

// closed remembers the nodes closed already: Main.Close runs once.
var closed sync.Map // *Main -> *sync.Once

func closeNode(t *testing.T, m *Main) {
	once, _ := closed.LoadOrStore(m, &sync.Once{})
	once.(*sync.Once).Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := m.Close(ctx); err != nil {
			t.Errorf("close node %s: %v", m.Config.NodeID, err)
		}
	})
}

// waitReady waits until /readyz reports every dependency ok.
func waitReady(t *testing.T, m *Main) {
	t.Helper()
	var err error
	var body []byte
	if !parleytest.Poll(60*time.Second, func() bool {
		var resp *http.Response
		body = nil
		if resp, err = http.Get("http://" + m.Addr() + "/readyz"); err != nil {
			return false
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}) {
		t.Fatalf("node %s not ready: %v %s", m.Config.NodeID, err, body)
	}
}

// metric reads a counter or gauge without labels from a node's /metrics.
func metric(t *testing.T, m *Main, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + m.Addr() + "/metrics")
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

// on returns a REST client of c's user on node m.
func on(c *client, m *Main) *client {
	return &client{t: c.t, base: "http://" + m.Addr(), token: c.token}
}

// member is a test user: a REST client and a user.
type member struct {
	c *client
	u user
}

// groupRoom signs up n users on the nodes in turn and puts them all in one
// group room created by the first.
func groupRoom(t *testing.T, nodes []*Main, prefix string, n int) (room, []member) {
	t.Helper()
	ms := make([]member, n)
	var wg sync.WaitGroup
	for i := range n {
		background(t, &wg, func() error {
			c, u, err := signUp(t, nodes[i%len(nodes)].Addr(), fmt.Sprintf("%s%d", prefix, i))
			ms[i] = member{c, u}
			return err
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	var r room
	if st := ms[0].c.do("POST", "/api/rooms", map[string]any{"kind": "group", "title": prefix}, &r); st != http.StatusCreated {
		t.Fatalf("create room: %d", st)
	}
	for i := 1; i < n; i++ {
		wg.Go(func() {
			if st := ms[i].c.do("POST", "/api/rooms/"+r.ID+"/members", nil, nil); st != http.StatusCreated {
				t.Errorf("join %d: %d", i, st)
			}
		})
	}
	wg.Wait()
	return r, ms
}

// subscribe opens a STOMP session of token on m and subscribes to the
// room, from since (or live when since < 0), waiting for the receipt.
func subscribe(t *testing.T, m *Main, token, roomID string, since int64) *stompClient {
	t.Helper()
	sc := dialStomp(t, m, "websocket", token)
	extra := ""
	if since >= 0 {
		extra = fmt.Sprintf("since-seq:%d\n", since)
	}
	sc.send("SUBSCRIBE\nid:1\ndestination:/topic/rooms." + roomID + "\n" + extra + "receipt:sub\n\n\x00")
	sc.expect("RECEIPT", "receipt-id:sub")
	return sc
}

// The helpers below come in pairs: readSeqs, sendStream and checkRun fail
// the test and are for the test's own goroutine; seqsOf, streamSeqs and
// runOf return an error, for the goroutines of background.

// background runs f on a goroutine of wg; an error it returns fails the
// test with t.Error, which any goroutine may call.
func background(t *testing.T, wg *sync.WaitGroup, f func() error) {
	wg.Go(func() {
		if err := f(); err != nil {
			t.Error(err)
		}
	})
}

// readSeqs reads n MESSAGE frames and returns their seqs.
func readSeqs(t *testing.T, sc *stompClient, n int) []int64 {
	t.Helper()
	seqs, err := seqsOf(sc, n)
	if err != nil {
		t.Fatal(err)
	}
	return seqs
}

// seqsOf is readSeqs for any goroutine.
func seqsOf(sc *stompClient, n int) ([]int64, error) {
	seqs := make([]int64, 0, n)
	for len(seqs) < n {
		f, err := sc.next()
		if err != nil {
			return seqs, fmt.Errorf("after %d of %d messages: %w", len(seqs), n, err)
		}
		if f.Command != stomp.Message {
			return seqs, fmt.Errorf("got %v, want MESSAGE", f)
		}
		s, _ := strconv.ParseInt(string(f.Get("seq")), 10, 64)
		seqs = append(seqs, s)
	}
	return seqs, nil
}

// readRun reads n messages and checks that their seqs run from from, in
// order, each once; for any goroutine.
func readRun(who string, sc *stompClient, n int, from int64) error {
	seqs, err := seqsOf(sc, n)
	if err != nil {
		return fmt.Errorf("%s: %w", who, err)
	}
	return runOf(who, seqs, from)
}

// drainSeqs reads what a client whose node went away still gets, until
// its connection ends or stays quiet for 5 s, and returns the last seq it
// holds (last if none): the client may read more before its socket
// closes, and resumes from there.
func drainSeqs(t *testing.T, who string, sc *stompClient, last int64) int64 {
	t.Helper()
	for {
		sc.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		f, err := sc.r.Read()
		if err != nil {
			return last
		}
		if f.Command == stomp.Message {
			s, _ := strconv.ParseInt(string(f.Get("seq")), 10, 64)
			if s != last+1 {
				t.Fatalf("%s got seq %d after %d", who, s, last)
			}
			last = s
		}
	}
}

// checkRun checks that seqs are from..to, in order, each once.
func checkRun(t *testing.T, who string, seqs []int64, from int64) {
	t.Helper()
	if err := runOf(who, seqs, from); err != nil {
		t.Fatal(err)
	}
}

// runOf is checkRun for any goroutine.
func runOf(who string, seqs []int64, from int64) error {
	for i, s := range seqs {
		if s != from+int64(i) {
			return fmt.Errorf("%s: message %d has seq %d, want %d (seqs %v)", who, i, s, from+int64(i), seqs)
		}
	}
	return nil
}

// oneAddress lifts a node's limits on sign-ups and logins per client
// address (a burst of 10 sign-ups; 20 logins at once, since a login counts
// as failed until it succeeds), for tests that sign up many users at once
// from 127.0.0.1.
func oneAddress(c *Config) { c.SignupRate, c.LoginMaxWait = 0, 0 }

// awaitMetric waits until a counter or gauge of node m reaches at least
// min.
func awaitMetric(t *testing.T, m *Main, name string, min float64) {
	t.Helper()
	if !parleytest.Poll(30*time.Second, func() bool { return metric(t, m, name) >= min }) {
		t.Fatalf("node %s: %s = %g after 30 s, want at least %g", m.Config.NodeID, name, metric(t, m, name), min)
	}
}

// presentOn is a node id and users with a session there.
type presentOn struct {
	node  string
	users []member
}

// spreadOver is where groupRoom and its callers put ms: member i on node
// i%len(nodes).
func spreadOver(nodes []*Main, ms []member) []presentOn {
	out := make([]presentOn, len(nodes))
	for i, m := range nodes {
		out[i].node = m.Config.NodeID
	}
	for i, mb := range ms {
		out[i%len(nodes)].users = append(out[i%len(nodes)].users, mb)
	}
	return out
}

// redisBehindProxy returns env with its Redis reached through a proxy
// (servicetest.Proxy), which can slow or hold what a node sends Redis,
// and the proxy.
func redisBehindProxy(t *testing.T, env clusterEnv) (clusterEnv, *servicetest.Proxy) {
	t.Helper()
	u, err := url.Parse(env.redis)
	if err != nil {
		t.Fatal(err)
	}
	proxy := servicetest.NewProxy(t, u.Host)
	u.Host = proxy.Addr()
	env.redis = u.String()
	return env, proxy
}

// envRedis returns a client of env's Redis, closed when the test ends.
func envRedis(t *testing.T, env clusterEnv) *goredis.Client {
	t.Helper()
	rdb, err := redis.NewClient(env.redis)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// settle waits until Redis shows every user present on its node: the
// presence each node reads when it routes a room. A session's CONNECT
// writes it, and tells every node in the same transaction.
func settle(t *testing.T, env clusterEnv, want ...presentOn) {
	t.Helper()
	rdb := envRedis(t, env)
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for _, p := range want {
		for _, mb := range p.users {
			for {
				_, err := rdb.ZScore(ctx, env.prefix+"presence:u:"+mb.u.ID, p.node).Result()
				if err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s not present on node %s after 30 s: %v", mb.u.Name, p.node, err)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
}

// routesSure waits until no node's relay will broadcast for want of
// routes: the presence epoch marker is older than a heartbeat and a second
// (so no read calls the reset hook again), then every node's
// parley_cluster_routes_unsure reads 0 (the Settle after the last reset
// has passed). A cluster's first start on a fresh prefix is such a reset.
func routesSure(t *testing.T, env clusterEnv, nodes ...*Main) {
	t.Helper()
	rdb := envRedis(t, env)
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	young := nodes[0].Config.PresenceTTL/3 + time.Second
	for {
		at, err := rdb.Get(ctx, env.prefix+"presence:epoch").Int64()
		if err == nil && time.Since(time.UnixMilli(at)) >= young {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("presence epoch marker still missing or young after 30 s (%d, %v)", at, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, m := range nodes {
		for metric(t, m, "parley_cluster_routes_unsure") != 0 {
			if time.Now().After(deadline) {
				t.Fatalf("node %s: routes still unsure after 30 s", m.Config.NodeID)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// quiet waits until a node's relay has nothing queued and its publish
// count has stopped moving (the joins of a big room are relayed too), and
// returns that count.
func quiet(t *testing.T, m *Main) float64 {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	last := -1.0
	for {
		n := metric(t, m, "parley_broker_publishes_total")
		// Commits wait in the relay's queue, then (cluster/send.go) for
		// the hot data to hold them before they are published.
		if n == last && metric(t, m, "parley_cluster_queued") == 0 && metric(t, m, "parley_cluster_unpublished") == 0 {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s never went quiet", m.Config.NodeID)
		}
		last = n
		time.Sleep(300 * time.Millisecond)
	}
}

// TestClusterRoomAcrossNodes: the members of one room spread over three
// nodes, with senders on every node, all receive every message in seq
// order exactly once, and a user with sessions on two nodes gets each
// message on both.
func TestClusterRoomAcrossNodes(t *testing.T) {
	env := needCluster(t)
	nodes := []*Main{startNode(t, env, "a"), startNode(t, env, "b"), startNode(t, env, "c")}
	const users, perUser = 6, 20
	r, ms := groupRoom(t, nodes, "spread", users)
	var subs []*stompClient
	var names []string
	for i, mb := range ms {
		subs = append(subs, subscribe(t, nodes[i%3], mb.c.token, r.ID, -1))
		names = append(names, fmt.Sprintf("%s on node %d", mb.u.Name, i%3))
	}
	// The first user also has a session on another node.
	subs = append(subs, subscribe(t, nodes[1], ms[0].c.token, r.ID, -1))
	names = append(names, ms[0].u.Name+" (second session) on node 1")
	settle(t, env, append(spreadOver(nodes, ms), presentOn{nodes[1].Config.NodeID, ms[:1]})...)

	var wg sync.WaitGroup
	for i, mb := range ms {
		wg.Go(func() {
			c := on(mb.c, nodes[i%3])
			for j := range perUser {
				if st := c.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]string{"body": fmt.Sprintf("%d-%d", i, j)}, nil); st != http.StatusCreated {
					t.Errorf("send: %d", st)
				}
			}
		})
	}
	total := users * perUser
	for i, sc := range subs {
		background(t, &wg, func() error { return readRun(names[i], sc, total, 1) })
	}
	wg.Wait()
	var publishes float64
	for _, m := range nodes {
		publishes += metric(t, m, "parley_broker_publishes_total")
	}
	t.Logf("%d messages, %.0f publishes across 3 nodes", total, publishes)
	if publishes > float64(2*total+users*2*2) { // messages, plus joins and leaves
		t.Errorf("%.0f publishes for %d messages, want at most 2 per message", publishes, total)
	}
}

// TestClusterPublishCounts: a 1:1 room whose two users sit on one node
// causes no broker publish; a 250-member room spread over three nodes
// causes at most two publishes per message from the sending node.
func TestClusterPublishCounts(t *testing.T) {
	env := needCluster(t)
	// 253 sign-ups from 127.0.0.1, over 80 on each node.
	nodes := []*Main{startNode(t, env, "a", oneAddress), startNode(t, env, "b", oneAddress), startNode(t, env, "c", oneAddress)}

	// 1:1, both on node a; other users online elsewhere.
	ca, ua := mustSignUp(t, nodes[0].Addr(), "alice")
	cb, ub := mustSignUp(t, nodes[0].Addr(), "bob")
	cc, uc := mustSignUp(t, nodes[1].Addr(), "carol")
	var dr room
	if st := ca.do("POST", "/api/rooms", map[string]any{"kind": "direct", "peer": ub.ID}, &dr); st != http.StatusCreated {
		t.Fatalf("direct room: %d", st)
	}
	_ = ua
	bob := subscribe(t, nodes[0], cb.token, dr.ID, -1)
	subscribe(t, nodes[0], ca.token, dr.ID, -1)
	dialStomp(t, nodes[1], "websocket", cc.token)
	settle(t, env, presentOn{nodes[0].Config.NodeID, []member{{ca, ua}, {cb, ub}}}, presentOn{nodes[1].Config.NodeID, []member{{cc, uc}}})
	routesSure(t, env, nodes...)
	before := quiet(t, nodes[0])
	for i := range 10 {
		if st := ca.do("POST", "/api/rooms/"+dr.ID+"/messages", map[string]string{"body": fmt.Sprint(i)}, nil); st != http.StatusCreated {
			t.Fatalf("send: %d", st)
		}
	}
	checkRun(t, "bob", readSeqs(t, bob, 10), 1)
	if got := metric(t, nodes[0], "parley_broker_publishes_total") - before; got != 0 {
		t.Errorf("1:1 room on one node: %.0f publishes for 10 messages, want 0", got)
	}

	// 250 members spread over the three nodes, every one connected.
	const n, msgs = 250, 20
	r, ms := groupRoom(t, nodes, "big", n)
	var watchers []*stompClient
	for i, mb := range ms {
		if i < 6 {
			watchers = append(watchers, subscribe(t, nodes[i%3], mb.c.token, r.ID, -1))
			continue
		}
		dialStomp(t, nodes[i%3], "websocket", mb.c.token)
	}
	var wg sync.WaitGroup
	settle(t, env, spreadOver(nodes, ms)...)
	before = quiet(t, nodes[0])
	for i := range msgs {
		if st := ms[0].c.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]string{"body": fmt.Sprint(i)}, nil); st != http.StatusCreated {
			t.Fatalf("send: %d", st)
		}
	}
	for i, sc := range watchers {
		background(t, &wg, func() error { return readRun(fmt.Sprintf("watcher %d", i), sc, msgs, 1) })
	}
	wg.Wait()
	got := metric(t, nodes[0], "parley_broker_publishes_total") - before
	t.Logf("250-member room over 3 nodes: %.0f publishes for %d messages (%.2f per message)", got, msgs, got/msgs)
	if got > 2*msgs {
		t.Errorf("%.0f publishes for %d messages, want at most %d", got, msgs, 2*msgs)
	}
}

// sendStream sends n messages over STOMP with receipts from sc, one every
// pause, and returns the seqs of the receipted ones.
func sendStream(t *testing.T, sc *stompClient, roomID string, n int, pause time.Duration) []int64 {
	t.Helper()
	seqs, err := streamSeqs(sc, roomID, n, pause)
	if err != nil {
		t.Fatal(err)
	}
	return seqs
}

// streamSeqs is sendStream for any goroutine.
func streamSeqs(sc *stompClient, roomID string, n int, pause time.Duration) ([]int64, error) {
	var seqs []int64
	for i := range n {
		if err := sc.write(fmt.Sprintf("SEND\ndestination:/app/rooms.%s\nreceipt:r%d\n\nm%d\x00", roomID, i, i)); err != nil {
			return seqs, fmt.Errorf("send %d: %w", i, err)
		}
		f, err := sc.next()
		if err != nil {
			return seqs, fmt.Errorf("receipt %d: %w", i, err)
		}
		if f.Command != stomp.Receipt {
			return seqs, fmt.Errorf("send %d: got %v, want RECEIPT", i, f)
		}
		s, _ := strconv.ParseInt(string(f.Get("seq")), 10, 64)
		seqs = append(seqs, s)
		time.Sleep(pause)
	}
	return seqs, nil
}

// closeAMQP force-closes a node's RabbitMQ connection with rabbitmqctl.
func closeAMQP(t *testing.T, node string) {
	t.Helper()
	out, err := exec.Command("rabbitmqctl", "list_connections", "-q", "--no-table-headers", "pid", "client_properties").CombinedOutput()
	if err != nil {
		t.Skipf("rabbitmqctl: %v: %s", err, out)
	}
	for line := range strings.Lines(string(out)) {
		pid, props, ok := strings.Cut(strings.TrimSpace(line), "\t")
		if ok && strings.Contains(props, `"parley node `+node+`"`) {
			if out, err := exec.Command("rabbitmqctl", "close_connection", pid, "parley fault test").CombinedOutput(); err != nil {
				t.Fatalf("close_connection: %v: %s", err, out)
			}
			return
		}
	}
	t.Fatalf("no RabbitMQ connection of node %s", node)
}

// TestClusterBrokerConnectionClosed: the RabbitMQ connections of the
// sending and a receiving node are force-closed while messages flow; both
// reconnect and every receiver gets every receipted message, in order,
// once.
func TestClusterBrokerConnectionClosed(t *testing.T) {
	env := needCluster(t)
	nodes := []*Main{startNode(t, env, "a"), startNode(t, env, "b"), startNode(t, env, "c")}
	r, ms := groupRoom(t, nodes, "fault", 3)
	recv := []*stompClient{subscribe(t, nodes[1], ms[1].c.token, r.ID, -1), subscribe(t, nodes[2], ms[2].c.token, r.ID, -1)}
	sender := dialStomp(t, nodes[0], "websocket", ms[0].c.token)
	settle(t, env, spreadOver(nodes, ms)...)
	const n = 300
	var wg sync.WaitGroup
	var receipted []int64
	// Each message is published to b and c: the connections are closed
	// after about 50 and 150 of the 300 messages.
	published := metric(t, nodes[0], "parley_broker_publishes_total")
	background(t, &wg, func() (err error) {
		receipted, err = streamSeqs(sender, r.ID, n, 3*time.Millisecond)
		return err
	})
	awaitMetric(t, nodes[0], "parley_broker_publishes_total", published+100)
	closeAMQP(t, nodes[0].Config.NodeID)
	awaitMetric(t, nodes[0], "parley_broker_publishes_total", published+300)
	closeAMQP(t, nodes[1].Config.NodeID)
	for i, sc := range recv {
		background(t, &wg, func() error { return readRun(fmt.Sprintf("receiver %d", i), sc, n, 1) })
	}
	wg.Wait()
	if len(receipted) != n {
		t.Fatalf("%d receipts, want %d", len(receipted), n)
	}
	for _, m := range nodes[:2] {
		parleytest.Eventually(t, 15*time.Second, func() bool { return metric(t, m, "parley_broker_reconnects_total") >= 1 },
			"node %s did not reconnect", m.Config.NodeID)
	}
}

// TestClusterNodeKilled: a node stops while messages flow; its user
// reconnects to another node with since-seq and gets every message.
func TestClusterNodeKilled(t *testing.T) {
	env := needCluster(t)
	nodes := []*Main{startNode(t, env, "a"), startNode(t, env, "b"), startNode(t, env, "c")}
	r, ms := groupRoom(t, nodes, "kill", 3)
	victim := subscribe(t, nodes[2], ms[2].c.token, r.ID, -1)
	sender := dialStomp(t, nodes[0], "websocket", ms[0].c.token)
	settle(t, env, presentOn{nodes[0].Config.NodeID, ms[:1]}, presentOn{nodes[2].Config.NodeID, ms[2:3]})
	const n = 200
	var wg sync.WaitGroup
	background(t, &wg, func() error {
		_, err := streamSeqs(sender, r.ID, n, 3*time.Millisecond)
		return err
	})
	seen := readSeqs(t, victim, 40)
	checkRun(t, "before the kill", seen, 1)
	closeNode(t, nodes[2])
	last := drainSeqs(t, "before the close", victim, seen[len(seen)-1])
	again := subscribe(t, nodes[1], ms[2].c.token, r.ID, last)
	checkRun(t, "after reconnecting", readSeqs(t, again, n-int(last)), last+1)
	wg.Wait()
}

// TestClusterRedisFlushed: the test's Redis keys are deleted while
// messages flow; presence comes back within one heartbeat TTL and every
// receiver gets every message, in order, once.
func TestClusterRedisFlushed(t *testing.T) {
	env := needCluster(t)
	nodes := []*Main{startNode(t, env, "a"), startNode(t, env, "b"), startNode(t, env, "c")}
	r, ms := groupRoom(t, nodes, "flush", 3)
	recv := []*stompClient{subscribe(t, nodes[1], ms[1].c.token, r.ID, -1), subscribe(t, nodes[2], ms[2].c.token, r.ID, -1)}
	sender := dialStomp(t, nodes[0], "websocket", ms[0].c.token)
	settle(t, env, spreadOver(nodes, ms)...)
	const n = 300
	var wg sync.WaitGroup
	// Each message is published to b and c: the keys are deleted after
	// about 30 of the 300 messages.
	published := metric(t, nodes[0], "parley_broker_publishes_total")
	background(t, &wg, func() error {
		_, err := streamSeqs(sender, r.ID, n, 15*time.Millisecond)
		return err
	})
	awaitMetric(t, nodes[0], "parley_broker_publishes_total", published+60)
	// The first heartbeat of node c that begins after the flush writes
	// its entries again: it is over once the count passes beats+1 (the
	// heartbeat under way at the flush may have read before it).
	beats := metric(t, nodes[2], "parley_presence_heartbeats_total")
	deleteRedisPrefix(t, env)
	flushed := time.Now()
	for i, sc := range recv {
		background(t, &wg, func() error { return readRun(fmt.Sprintf("receiver %d", i), sc, n, 1) })
	}
	// Presence is back within one heartbeat (a third of the TTL): the
	// heartbeat count is read before the keys, so a count past beats+1
	// means a whole heartbeat ran after the flush before the keys were
	// read.
	rdb, _ := redis.NewClient(env.redis)
	defer rdb.Close()
	for {
		done := metric(t, nodes[2], "parley_presence_heartbeats_total")
		keys, _ := rdb.Keys(context.Background(), env.prefix+"presence:u:"+ms[2].u.ID).Result()
		if len(keys) == 1 {
			t.Logf("presence restored %v after the flush", time.Since(flushed).Round(time.Millisecond))
			break
		}
		if done > beats+1 {
			t.Fatalf("presence not restored by the first heartbeat after the flush (%g heartbeats since)", done-beats)
		}
		time.Sleep(50 * time.Millisecond)
	}
	wg.Wait()
}

// TestClusterReadyzNamesDependencies: /readyz reports each dependency of a
// cluster node; with RabbitMQ unreachable the node still starts (serving
// its local sessions) and /readyz answers 503 naming the broker.
func TestClusterReadyzNamesDependencies(t *testing.T) {
	t.Parallel() // waits ~10 s for a broker that never answers
	env := needCluster(t)
	env.broker = "amqp://guest:guest@127.0.0.1:1/" // nothing listens there
	m := &Main{Config: clusterConfig(t, env, "nobroker")}
	if err := m.Open(context.Background()); err != nil {
		t.Fatalf("open a node without RabbitMQ: %v", err)
	}
	t.Cleanup(func() { closeNode(t, m) })
	resp, err := http.Get("http://" + m.Addr() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/readyz status = %d, want 503", resp.StatusCode)
	}
	for _, want := range []string{"store: ok\n", "redis: ok\n", "broker: "} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/readyz body = %q, want it to contain %q", body, want)
		}
	}
	if strings.Contains(string(body), "broker: ok") {
		t.Errorf("/readyz body = %q: the broker is reported ok", body)
	}
	if resp, err := http.Get("http://" + m.Addr() + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz without RabbitMQ: %v, %v; want 200 (the node serves)", resp, err)
	}
}
