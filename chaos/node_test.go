package chaos

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"parley/servicetest"
)

// node is a `parley serve` child process. A case kills it with SIGKILL or
// SIGTERM, and may start it again on the same flags (a new address).
type node struct {
	t    *testing.T
	name string   // its --node-id, or a label in single-node mode
	args []string // serve flags but --addr
	log  string   // path of its stderr

	mu   sync.Mutex // guards the following fields
	addr string     // HTTP address of the running process, "" while down
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited and been waited for
	err  error         // the process's exit, once done
}

// startNode starts `parley serve` with args (and an address chosen by
// the system) and waits until /readyz answers 200. It is killed at the end
// of the case at the latest.
func startNode(t *testing.T, name string, args ...string) *node {
	t.Helper()
	if !slices.Contains(args, "--data") {
		args = append(args, "--data", t.TempDir())
	}
	n := &node{t: t, name: name, args: args, log: filepath.Join(t.TempDir(), name+".log")}
	n.start()
	t.Cleanup(func() { n.signal(syscall.SIGKILL); n.wait() })
	return n
}

// clusterArgs are the serve flags of a cluster node.
func clusterArgs(id, store, broker, redis, prefix string, extra ...string) []string {
	return append([]string{
		"--store", store, "--broker", broker, "--redis", redis, "--redis-prefix", prefix,
		"--node-id", id,
		"--stomp-send-rate", "2000", "--rest-send-rate", "0",
	}, extra...)
}

// start starts the process and waits until it is ready.
func (n *node) start() {
	n.t.Helper()
	logf, err := os.OpenFile(n.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		n.t.Fatal(err)
	}
	cmd := exec.Command(parleyBin, append([]string{"serve", "--addr", "127.0.0.1:0"}, n.args...)...)
	cmd.Env = os.Environ()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		n.t.Fatal(err)
	}
	cmd.Stdout = logf
	if err := cmd.Start(); err != nil {
		n.t.Fatalf("start node %s: %v", n.name, err)
	}
	done := make(chan struct{})
	addrc := make(chan string, 1)
	go func() {
		defer logf.Close()
		re := regexp.MustCompile(`parley serving.* addr=(\S+)`)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			fmt.Fprintln(logf, sc.Text())
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addrc <- m[1]
			}
		}
		io.Copy(logf, stderr)
		err := cmd.Wait()
		n.mu.Lock()
		n.err = err
		n.addr = ""
		n.mu.Unlock()
		close(done)
	}()
	n.mu.Lock()
	n.cmd, n.done = cmd, done
	n.mu.Unlock()
	var addr string
	select {
	case addr = <-addrc:
	case <-done:
		n.t.Fatalf("node %s exited at start: %v\n%s", n.name, n.err, servicetest.LastLines(readFile(n.log), 10))
	case <-time.After(60 * time.Second):
		n.t.Fatalf("node %s did not start in 60 s\n%s", n.name, servicetest.LastLines(readFile(n.log), 10))
	}
	n.mu.Lock()
	n.addr = addr
	n.mu.Unlock()
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, _, err := n.ready(2 * time.Second)
		if err == nil && st == http.StatusOK {
			return
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("node %s not ready in 60 s: %d %v\n%s", n.name, st, err, servicetest.LastLines(readFile(n.log), 10))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Addr returns the node's HTTP address, "" while it is down.
func (n *node) Addr() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.addr
}

// pid returns the process id of the running process, 0 while down.
func (n *node) pid() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil || n.addr == "" {
		return 0
	}
	return n.cmd.Process.Pid
}

// signal sends sig to the running process; after SIGKILL the node counts
// as down at once.
func (n *node) signal(sig syscall.Signal) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil {
		return
	}
	n.cmd.Process.Signal(sig)
	if sig == syscall.SIGKILL {
		n.addr = ""
	}
}

// wait waits for the process to exit and returns its exit error.
func (n *node) wait() error {
	n.mu.Lock()
	done := n.done
	n.mu.Unlock()
	if done == nil {
		return nil
	}
	<-done
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.err
}

// ready asks /readyz, with a client deadline of d: the status and body.
func (n *node) ready(d time.Duration) (int, string, error) {
	addr := n.Addr()
	if addr == "" {
		return 0, "", fmt.Errorf("node %s is down", n.name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/readyz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

// metric returns the sum of the samples of a metric from /metrics, or -1
// if the node does not answer: of every sample, or with labels given of
// those whose labels contain one of them (such as `reason="queue_frames"`).
func (n *node) metric(name string, labels ...string) float64 {
	addr := n.Addr()
	if addr == "" {
		return -1
	}
	hc := http.Client{Timeout: 2 * time.Second}
	resp, err := hc.Get("http://" + addr + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		if rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue
		}
		if len(labels) > 0 && !slices.ContainsFunc(labels, func(l string) bool { return strings.Contains(rest, l) }) {
			continue
		}
		f := strings.Fields(rest[strings.LastIndexByte(rest, '}')+1:])
		if len(f) == 0 {
			continue
		}
		if v, err := strconv.ParseFloat(f[0], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// rss returns the resident memory of the running process in bytes, from
// /proc, 0 if it is down.
func (n *node) rss() int64 {
	pid := n.pid()
	if pid == 0 {
		return 0
	}
	for line := range strings.Lines(readFile(fmt.Sprintf("/proc/%d/status", pid))) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			kb, _ := strconv.ParseInt(f[0], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// logLines returns the lines of the node's log that contain every one of
// words.
func (n *node) logLines(words ...string) []string {
	var out []string
	for line := range strings.Lines(readFile(n.log)) {
		ok := true
		for _, w := range words {
			ok = ok && strings.Contains(line, w)
		}
		if ok {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}
