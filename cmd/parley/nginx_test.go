package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"parley/stomp"
)

// TestNginxCluster puts a real nginx, configured by deploy/nginx.conf, in
// front of three cluster nodes and talks to nginx only: sign-up, login and
// a room over REST; two STOMP sessions that land on different nodes
// (least_conn) and pass messages in order; and, when the node of one
// session stops, its client reconnecting through nginx to a live node and
// resuming with since-seq without losing a message.
func TestNginxCluster(t *testing.T) {
	bin := os.Getenv("PARLEY_TEST_NGINX")
	if bin == "" {
		t.Skip("the nginx test needs PARLEY_TEST_NGINX, the path of the nginx binary (.ci/run sets it)")
	}
	env := needCluster(t)
	nodes := []*Main{startNode(t, env, "a"), startNode(t, env, "b"), startNode(t, env, "c")}
	front := startNginx(t, bin, nodes)

	// REST through nginx: groupRoom signs both users up, logs them in,
	// creates the room and joins it, checking every status.
	r, ms := groupRoom(t, []*Main{front}, "edge", 2)

	// Two sessions through nginx: least_conn sends the second to a node
	// without one.
	recv := subscribe(t, front, ms[1].c.token, r.ID, -1)
	x := nodeOfOnlySession(t, nodes)
	sender := dialStomp(t, front, "websocket", ms[0].c.token)
	got := stompSessions(t, nodes)
	if got[x] != 1 || totalSessions(got) != 2 {
		t.Fatalf("STOMP sessions per node %v, want the second session on another node than %d", got, x)
	}

	// Messages from one session reach the other in order; the node of the
	// receiving session stops part way through.
	const n = 200
	var wg sync.WaitGroup
	var receipted []int64
	background(t, &wg, func() (err error) {
		receipted, err = streamSeqs(sender, r.ID, n, 3*time.Millisecond)
		return err
	})
	seen := readSeqs(t, recv, 40)
	checkRun(t, "through nginx", seen, 1)
	closeNode(t, nodes[x])
	last := seen[len(seen)-1]
	// The client may read more before the node's ERROR, which tells it to
	// reconnect; then nginx closes the connection.
	hinted := false
	for {
		recv.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		f, err := recv.r.Read()
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("the session through nginx stayed open after its node stopped")
		}
		if err != nil {
			break
		}
		switch f.Command {
		case stomp.Message:
			s, _ := strconv.ParseInt(string(f.Get("seq")), 10, 64)
			if s != last+1 {
				t.Fatalf("before the close got seq %d after %d", s, last)
			}
			last = s
		case stomp.Error:
			hinted = true
		}
	}
	if !hinted {
		t.Errorf("no ERROR frame through nginx before the stopped node's session closed")
	}

	// The client reconnects through nginx, lands on a live node and
	// resumes from the last seq it holds.
	again := subscribe(t, front, ms[1].c.token, r.ID, last)
	live := append(append([]*Main(nil), nodes[:x]...), nodes[x+1:]...)
	if got := stompSessions(t, live); totalSessions(got) != 2 {
		t.Fatalf("STOMP sessions on the live nodes %v, want the sender's and the reconnected one", got)
	}
	checkRun(t, "after reconnecting through nginx", readSeqs(t, again, n-int(last)), last+1)
	wg.Wait()
	if len(receipted) != n {
		t.Fatalf("%d receipts, want %d", len(receipted), n)
	}

	// REST through nginx still works with a node gone.
	if st := ms[0].c.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]string{"body": "after"}, nil); st != http.StatusCreated {
		t.Fatalf("send through nginx after the node stopped: %d", st)
	}
	again.expect("MESSAGE", fmt.Sprintf("seq:%d", n+1))
	var info room
	if st := ms[1].c.do("GET", "/api/rooms/"+r.ID, nil, &info); st != http.StatusOK || info.LastSeq != n+1 {
		t.Errorf("GET room through nginx = %d, last_seq %d; want 200, %d", st, info.LastSeq, n+1)
	}

	// A browser opens /ws with its page's Origin: nginx passes the Host
	// with its port, so the node's same-host check lets it in and keeps
	// a foreign page out.
	for _, tc := range []struct {
		origin string
		ok     bool
	}{
		{"http://" + front.Addr(), true},
		{"http://elsewhere.example", false},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ws, resp, err := websocket.Dial(ctx, "ws://"+front.Addr()+"/ws", &websocket.DialOptions{
			Subprotocols: []string{"v12.stomp"},
			HTTPHeader:   http.Header{"Origin": {tc.origin}},
		})
		cancel()
		switch {
		case tc.ok && err != nil:
			t.Errorf("upgrade through nginx with Origin %s: %v", tc.origin, err)
		case !tc.ok && (resp == nil || resp.StatusCode != http.StatusForbidden):
			t.Errorf("upgrade through nginx with Origin %s: %v, want 403", tc.origin, err)
		}
		if ws != nil {
			ws.CloseNow()
		}
	}
}

// stompSessions reads each node's open STOMP sessions from its /metrics.
func stompSessions(t *testing.T, nodes []*Main) []int {
	t.Helper()
	got := make([]int, len(nodes))
	for i, m := range nodes {
		got[i] = int(metric(t, m, "parley_stomp_connections"))
	}
	return got
}

// nodeOfOnlySession returns the index of the one node with a STOMP session.
func nodeOfOnlySession(t *testing.T, nodes []*Main) int {
	t.Helper()
	got := stompSessions(t, nodes)
	if totalSessions(got) == 1 {
		for i, s := range got {
			if s == 1 {
				return i
			}
		}
	}
	t.Fatalf("STOMP sessions per node %v, want one session on one node", got)
	return -1
}

// totalSessions adds up the sessions of stompSessions.
func totalSessions(perNode []int) int {
	n := 0
	for _, s := range perNode {
		n += s
	}
	return n
}

// nginxDeploy is the configuration under test, from cmd/parley.
const nginxDeploy = "../../deploy/nginx.conf"

// nginxConf rewrites deploy/nginx.conf for a test: its upstream lines
// `server 127.0.0.1:8081 …` to 808N (scripts/cluster.sh's nodes) become
// nodes, in order, and its `listen 127.0.0.1:8080;` becomes listen. Lines
// that are not there are an error, so the test follows the file.
func nginxConf(conf, listen string, nodes []string) (string, error) {
	if c := strings.Count(conf, "server 127.0.0.1:"); c != len(nodes) {
		return "", fmt.Errorf("%d upstream servers on 127.0.0.1, want the test's %d nodes", c, len(nodes))
	}
	var pairs []string
	for i, addr := range nodes {
		old := fmt.Sprintf("server 127.0.0.1:%d ", 8081+i)
		if c := strings.Count(conf, old); c != 1 {
			return "", fmt.Errorf("%q appears %d times, want once", old, c)
		}
		pairs = append(pairs, old, "server "+addr+" ")
	}
	const old = "listen 127.0.0.1:8080;"
	if c := strings.Count(conf, old); c != 1 {
		return "", fmt.Errorf("%q appears %d times, want once", old, c)
	}
	pairs = append(pairs, old, "listen "+listen+";")
	return strings.NewReplacer(pairs...).Replace(conf), nil
}

// TestNginxConf checks, without nginx, that deploy/nginx.conf still has
// the lines TestNginxCluster rewrites, and that the rewriting refuses a
// file that lacks them.
func TestNginxConf(t *testing.T) {
	deploy, err := os.ReadFile(nginxDeploy)
	if err != nil {
		t.Fatal(err)
	}
	nodes := []string{"127.0.0.1:40001", "127.0.0.1:40002", "127.0.0.1:40003"}
	for _, tc := range []struct {
		name, conf string
		nodes      []string
		ok         bool
	}{
		{"deploy/nginx.conf", string(deploy), nodes, true},
		{"fewer nodes than upstream servers", string(deploy), nodes[:2], false},
		{"more nodes than upstream servers", string(deploy), append(nodes, "127.0.0.1:40004"), false},
		{"no listen line", strings.Replace(string(deploy), "listen 127.0.0.1:8080;", "listen 8080;", 1), nodes, false},
		{"no upstream", strings.ReplaceAll(string(deploy), "server 127.0.0.1:", "server localhost:"), nodes, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := nginxConf(tc.conf, "127.0.0.1:40000", tc.nodes)
			if !tc.ok {
				if err == nil {
					t.Errorf("nginxConf() = nil error, want one")
				}
				return
			}
			if err != nil {
				t.Fatalf("nginxConf(): %v", err)
			}
			for _, want := range append([]string{"listen 127.0.0.1:40000;"}, tc.nodes...) {
				if !strings.Contains(got, want) {
					t.Errorf("nginxConf() lacks %q:\n%s", want, got)
				}
			}
			for _, old := range []string{"server 127.0.0.1:808", "listen 127.0.0.1:8080"} {
				if strings.Contains(got, old) {
					t.Errorf("nginxConf() still has %q:\n%s", old, got)
				}
			}
		})
	}
}

// nginxCheck runs nginx -t on the configuration file conf.
func nginxCheck(t *testing.T, bin, conf, prefix string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, bin, "-t", "-e", "stderr", "-c", conf, "-p", prefix).CombinedOutput(); err != nil {
		t.Fatalf("nginx -t -c %s: %v\n%s", conf, err, out)
	}
}

// startNginx checks deploy/nginx.conf with nginx -t, then runs nginx in
// the foreground with that file in front of nodes, on a free loopback
// port, until the test ends. It returns a stand-in *Main for nginx: only
// its Addr is set, so the helpers that take a node (groupRoom, subscribe,
// dialStomp, waitReady) talk to nginx.
func startNginx(t *testing.T, bin string, nodes []*Main) *Main {
	t.Helper()
	deploy, err := filepath.Abs(nginxDeploy)
	if err != nil {
		t.Fatal(err)
	}
	conf, err := os.ReadFile(deploy)
	if err != nil {
		t.Fatalf("read %s: %v", nginxDeploy, err)
	}
	// nginx run by root runs its workers as nobody: the prefix, where the
	// temp files go, must be theirs to reach (t.TempDir is root's alone).
	prefix, err := os.MkdirTemp("", "parley-nginx-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(prefix) })
	if err := os.Chmod(prefix, 0o755); err != nil {
		t.Fatal(err)
	}
	prefix += "/"
	nginxCheck(t, bin, deploy, prefix)

	// A free port: taken and given back for nginx to listen on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	addrs := make([]string, len(nodes))
	for i, m := range nodes {
		addrs[i] = m.Addr()
	}
	text, err := nginxConf(string(conf), ln.Addr().String(), addrs)
	if err != nil {
		t.Fatalf("%s no longer matches the test: %v", nginxDeploy, err)
	}
	path := filepath.Join(prefix, "nginx.conf")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	nginxCheck(t, bin, path, prefix)

	logPath := filepath.Join(prefix, "nginx.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, "-e", "stderr", "-c", path, "-p", prefix, "-g", "daemon off;")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("start nginx: %v", err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	nginxLog := func() string { b, _ := os.ReadFile(logPath); return string(b) }
	t.Cleanup(func() {
		// SIGTERM: the master stops its workers, then itself.
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
			t.Errorf("nginx did not stop on SIGTERM")
		}
		if t.Failed() {
			t.Logf("nginx log:\n%s", nginxLog())
		}
	})

	front := &Main{Config: Config{NodeID: "nginx"}, ln: ln}
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-exited:
			t.Fatalf("nginx exited: %v\n%s", waitErr, nginxLog())
		default:
		}
		c, err := net.DialTimeout("tcp", front.Addr(), time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nginx not listening on %s: %v", front.Addr(), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	waitReady(t, front)
	return front
}
