package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// serveProcess is this test binary running as `parley serve` in a process
// of its own, with its stderr kept line by line so that a test can wait
// for what it logs.
type serveProcess struct {
	cmd       *exec.Cmd
	addr      string        // HTTP address
	stompAddr string        // raw TCP STOMP address, "" when not listening
	done      chan struct{} // closed when stderr has been read to the end
	killOnce  sync.Once

	mu      sync.Mutex // guards the following fields
	log     []string
	changed chan struct{} // closed and replaced when a line is added
}

var servingRE = regexp.MustCompile(`parley serving.* addr=(\S+) stomp_addr=(\S+)`)

// startServeProcess starts `parley serve --addr 127.0.0.1:0 args...` and
// waits until it logs that it serves. It is killed at the end of the test.
func startServeProcess(t *testing.T, args ...string) *serveProcess {
	t.Helper()
	return startServeCommand(t, exec.Command(os.Args[0], append([]string{"--addr", "127.0.0.1:0"}, args...)...))
}

// startServeCommand starts cmd, which runs this test binary as `parley
// serve` (with PARLEY_TEST_EXEC_SERVE=1 added to its environment), and
// waits until it logs that it serves, like startServeProcess.
func startServeCommand(t *testing.T, cmd *exec.Cmd) *serveProcess {
	t.Helper()
	p := &serveProcess{cmd: cmd, done: make(chan struct{}), changed: make(chan struct{})}
	if p.cmd.Env == nil {
		p.cmd.Env = os.Environ()
	}
	p.cmd.Env = append(p.cmd.Env, "PARLEY_TEST_EXEC_SERVE=1")
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start server: %v", err)
	}
	t.Cleanup(p.kill)
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.log = append(p.log, sc.Text())
			close(p.changed)
			p.changed = make(chan struct{})
			p.mu.Unlock()
		}
		io.Copy(io.Discard, stderr)
	}()
	line, ok := p.waitLog(servingRE, 60*time.Second)
	if !ok {
		t.Fatalf("server did not start: %s", p.lines())
	}
	m := servingRE.FindStringSubmatch(line)
	p.addr = m[1]
	if m[2] != `""` {
		p.stompAddr = m[2]
	}
	return p
}

// waitLog waits until the process has logged a line matching re and
// returns it; it gives up when the process ends or after patience.
func (p *serveProcess) waitLog(re *regexp.Regexp, patience time.Duration) (string, bool) {
	timeout := time.After(patience)
	for seen, ended := 0, false; ; {
		p.mu.Lock()
		lines, changed := p.log[seen:], p.changed
		seen = len(p.log)
		p.mu.Unlock()
		for _, l := range lines {
			if re.MatchString(l) {
				return l, true
			}
		}
		if ended {
			return "", false
		}
		select {
		case <-changed:
		case <-p.done:
			ended = true // one more look at the last lines
		case <-timeout:
			return "", false
		}
	}
}

// lines returns what the process has logged so far.
func (p *serveProcess) lines() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.log, "\n")
}

// kill sends SIGKILL and waits for the process to end.
func (p *serveProcess) kill() {
	p.killOnce.Do(func() {
		p.cmd.Process.Kill()
		<-p.done
		p.cmd.Wait()
	})
}
