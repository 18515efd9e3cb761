package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"parley"
)

// nodeProcess is a cluster node running in a process of its own (this
// test binary as `parley serve`), so that a test can SIGKILL it.
type nodeProcess struct {
	id   string
	addr string
	cmd  *exec.Cmd
	done chan struct{} // closed when its stderr has been read to the end
	once sync.Once

	mu  sync.Mutex // guards log
	log []string   // its stderr, line by line
}

// startNodeProcess starts a cluster node process on 127.0.0.1:0 with the
// services of env and presence entries living ttl, and waits until it is
// ready. It is killed at the end of the test at the latest.
func startNodeProcess(t *testing.T, env clusterEnv, name string, ttl time.Duration) *nodeProcess {
	t.Helper()
	p := &nodeProcess{id: name + "-" + parley.NewID()[:6], done: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0], "--addr", "127.0.0.1:0", "--data", t.TempDir(),
		"--store", env.store, "--broker", env.broker, "--redis", env.redis, "--redis-prefix", env.prefix,
		"--node-id", p.id, "--presence-ttl", ttl.String(), "--stomp-send-rate", "1000", "--stomp-queue", "4096")
	p.cmd.Env = append(os.Environ(), "PARLEY_TEST_EXEC_SERVE=1")
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start node %s: %v", p.id, err)
	}
	t.Cleanup(p.kill)
	addrc := make(chan string, 1)
	go func() {
		defer close(p.done)
		re := regexp.MustCompile(`parley serving.* addr=(\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.log = append(p.log, sc.Text())
			p.mu.Unlock()
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addrc <- m[1]
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	select {
	case p.addr = <-addrc:
	case <-p.done:
		t.Fatalf("node %s exited: %s", p.id, p.lines())
	case <-time.After(60 * time.Second):
		t.Fatalf("node %s did not start in 60 s: %s", p.id, p.lines())
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get("http://" + p.addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s not ready: %v %s", p.id, err, p.lines())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill sends SIGKILL and waits for the process to end.
func (p *nodeProcess) kill() {
	p.once.Do(func() {
		p.cmd.Process.Kill()
		<-p.done
		p.cmd.Wait()
	})
}

// lines returns what the process has logged so far.
func (p *nodeProcess) lines() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.log, "\n")
}

// TestClusterNodeSIGKILL: a node process is killed with SIGKILL while
// messages flow. Its user reconnects to another node with since-seq and
// gets every later message once, in order; what is sent while the node is
// dead is stored and reaches everyone else; and within a bounded wait the
// dead node's presence is gone and the sending node publishes to it no
// more.
func TestClusterNodeSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node process")
	}
	env := needCluster(t)
	a, b := startNode(t, env, "a"), startNode(t, env, "b")
	ttl := a.Config.PresenceTTL
	c := startNodeProcess(t, env, "c", ttl)

	// The sender is on a, a receiver on b, and two users on c: the victim,
	// who comes back on b, and one who never comes back.
	r, ms := groupRoom(t, []*Main{a, b}, "sigkill", 4)
	sender := dialStomp(t, a, "websocket", ms[0].c.token)
	receiver := subscribe(t, b, ms[1].c.token, r.ID, -1)
	victim := dialStompAt(t, "websocket", c.addr, ms[2].c.token)
	victim.send("SUBSCRIBE\nid:1\ndestination:/topic/rooms." + r.ID + "\nreceipt:sub\n\n\x00")
	victim.expect("RECEIPT", "receipt-id:sub")
	dialStompAt(t, "websocket", c.addr, ms[3].c.token)
	settle(t, env, presentOn{a.Config.NodeID, ms[:1]}, presentOn{b.Config.NodeID, ms[1:2]}, presentOn{c.id, ms[2:4]})

	const n = 300
	var wg sync.WaitGroup
	var receipted, received []int64
	background(t, &wg, func() (err error) {
		receipted, err = streamSeqs(sender, r.ID, n, 5*time.Millisecond)
		return err
	})
	background(t, &wg, func() (err error) {
		received, err = seqsOf(receiver, n)
		return err
	})
	seen := readSeqs(t, victim, 40)
	checkRun(t, "victim on c before the kill", seen, 1)
	c.kill()
	killed := time.Now()
	last := drainSeqs(t, "victim on c", victim, seen[len(seen)-1])
	if last >= n {
		t.Fatalf("the victim had all %d messages before the kill: nothing to resume", n)
	}
	again := subscribe(t, b, ms[2].c.token, r.ID, last)
	checkRun(t, "victim back on b", readSeqs(t, again, n-int(last)), last+1)
	wg.Wait()
	if len(receipted) != n {
		t.Fatalf("%d receipts, want %d", len(receipted), n)
	}
	checkRun(t, "receipts", receipted, 1)
	checkRun(t, "receiver on b", received, 1)
	t.Logf("victim held seq %d at the kill; %d messages sent after it", last, n-int(last))

	// The dead node stops being a target once its presence entries expire
	// (one TTL after its last heartbeat) and a's cached route for the room
	// expires (the relay's RouteTTL, 10 s by default). Every message sent
	// meanwhile still reaches both users on b.
	rdb := envRedis(t, env)
	ctx := context.Background()
	nodeKey := env.prefix + "presence:n:" + c.id
	userKey := func(i int) string { return env.prefix + "presence:u:" + ms[i].u.ID }
	// Each check returns "" once the dead node is out of that place.
	checks := []struct {
		name string
		f    func() string
	}{
		{"presence keys", func() string {
			if k, _ := rdb.Exists(ctx, nodeKey, userKey(3)).Result(); k > 0 {
				return fmt.Sprintf("%d of its presence keys are still in Redis", k)
			}
			return ""
		}},
		{"live presence", func() string {
			now := strconv.FormatInt(time.Now().UnixMilli(), 10)
			live, err := rdb.ZRangeByScore(ctx, userKey(2), &goredis.ZRangeBy{Min: "(" + now, Max: "+inf"}).Result()
			if err != nil || slices.Contains(live, c.id) {
				return fmt.Sprintf("the victim's presence still names it live: %v %v", live, err)
			}
			return ""
		}},
		{"a's route", func() string {
			if slices.Contains(a.cluster.relay.Nodes(r.ID), c.id) {
				return "node a still routes the room to it"
			}
			return ""
		}},
	}
	cleared := map[string]time.Duration{}
	stale := func() string {
		var why []string
		for _, ch := range checks {
			if w := ch.f(); w != "" {
				why = append(why, w)
			} else if _, ok := cleared[ch.name]; !ok {
				cleared[ch.name] = time.Since(killed).Round(time.Millisecond)
			}
		}
		return strings.Join(why, "; ")
	}
	next := int64(n + 1)
	deadline := killed.Add(10*ttl + 30*time.Second)
	for {
		// Each message makes node a recompute its route once the cached
		// one is too old.
		sendStream(t, sender, r.ID, 1, 0)
		checkRun(t, "receiver on b", readSeqs(t, receiver, 1), next)
		checkRun(t, "victim back on b", readSeqs(t, again, 1), next)
		next++
		why := stale()
		if why == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s %v after SIGKILL: %s", c.id, time.Since(killed).Round(time.Millisecond), why)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("node %s no longer a target %v after SIGKILL (%d more messages sent while waiting); each place clear at: %v",
		c.id, time.Since(killed).Round(time.Millisecond), next-n-1, cleared)
	if score, err := rdb.ZScore(ctx, userKey(2), c.id).Result(); err == nil {
		t.Logf("the victim's presence set still holds the dead node (expired at %v)",
			time.UnixMilli(int64(score)).Sub(killed).Round(time.Millisecond))
	}

	// From now on a message costs a exactly one publish: to b.
	const more = 20
	before := quiet(t, a)
	background(t, &wg, func() error {
		seqs, err := streamSeqs(sender, r.ID, more, 0)
		if err != nil {
			return err
		}
		return runOf("receipts", seqs, next)
	})
	background(t, &wg, func() error { return readRun("receiver on b", receiver, more, next) })
	checkRun(t, "victim back on b", readSeqs(t, again, more), next)
	wg.Wait()
	if got := metric(t, a, "parley_broker_publishes_total") - before; got != more {
		t.Errorf("node a: %.0f publishes for %d messages with every recipient on b, want %d", got, more, more)
	}
	total := next - 1 + more

	// Everything is stored, once, in order.
	var after int64
	for {
		var page struct{ Messages []message }
		if st := on(ms[1].c, b).do("GET", fmt.Sprintf("/api/rooms/%s/messages?after=%d&limit=100", r.ID, after), nil, &page); st != http.StatusOK {
			t.Fatalf("history: %d", st)
		}
		for _, m := range page.Messages {
			if m.Seq != after+1 {
				t.Fatalf("history: seq %d follows %d", m.Seq, after)
			}
			after = m.Seq
		}
		if len(page.Messages) < 100 {
			break
		}
	}
	if after != total {
		t.Errorf("history ends at seq %d, want %d", after, total)
	}

	if gone := metric(t, a, "parley_cluster_nodes_gone_total"); gone > 0 {
		t.Logf("node a dropped %.0f gone nodes", gone)
	}
	for line := range strings.Lines(c.lines()) {
		line = strings.TrimSpace(line)
		if strings.Contains(line, "DATA RACE") || strings.Contains(line, "panic") {
			t.Errorf("node %s logged: %s", c.id, line)
		} else if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			t.Logf("node %s logged: %s", c.id, line)
		}
	}
}
