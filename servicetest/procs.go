package servicetest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// procs is the processes of one private instance, for Freeze, Thaw and
// Kill: the descendants of its first process (root), which need not share
// its process group (PostgreSQL's backends call setsid), and the
// processes extra picks (a daemon that left the tree, such as RabbitMQ's
// epmd).
type procs struct {
	name  string
	root  func() int                      // the first process, 0: not running
	extra func(pid int, comm string) bool // nil: none
	mu    sync.Mutex                      // guards the following field
	// frozen is the processes Freeze stopped, until Thaw continues them.
	frozen []int
}

// proc is one line of /proc/<pid>/stat.
type proc struct {
	pid, ppid int
	comm      string
	state     byte // R, S, D, T (stopped), Z (zombie)...
}

// readProc reads /proc/<pid>/stat.
func readProc(pid int) (proc, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return proc{}, err
	}
	// pid (comm) state ppid ...; comm may hold spaces and parentheses.
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return proc{}, fmt.Errorf("/proc/%d/stat: unexpected %q", pid, b)
	}
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 2 || len(f[0]) != 1 {
		return proc{}, fmt.Errorf("/proc/%d/stat: unexpected %q", pid, b)
	}
	ppid, err := strconv.Atoi(f[1])
	if err != nil {
		return proc{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return proc{pid: pid, ppid: ppid, comm: string(b[open+1 : end]), state: f[0][0]}, nil
}

// allProcs reads every process of the machine.
func allProcs() []proc {
	entries, _ := os.ReadDir("/proc")
	var out []proc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, err := readProc(pid); err == nil { // a process may end meanwhile
			out = append(out, p)
		}
	}
	return out
}

// list returns the instance's live processes (not the zombies), the root
// first.
func (s *procs) list() []proc {
	root := s.root() // 0: only the extra processes
	all := allProcs()
	children := map[int][]proc{}
	var out []proc
	seen := map[int]bool{}
	for _, p := range all {
		children[p.ppid] = append(children[p.ppid], p)
		if root > 0 && p.pid == root {
			out = append(out, p)
			seen[p.pid] = true
		}
	}
	for i := 0; i < len(out); i++ {
		for _, c := range children[out[i].pid] {
			if !seen[c.pid] {
				seen[c.pid] = true
				out = append(out, c)
			}
		}
	}
	if s.extra != nil {
		for _, p := range all {
			if !seen[p.pid] && s.extra(p.pid, p.comm) {
				seen[p.pid] = true
				out = append(out, p)
			}
		}
	}
	return slices.DeleteFunc(out, func(p proc) bool { return p.state == 'Z' || p.state == 'X' })
}

// pids returns the pids of the instance's processes, the first one's
// first.
func (s *procs) pids() []int {
	var out []int
	for _, p := range s.list() {
		out = append(out, p.pid)
	}
	return out
}

// freeze stops (SIGSTOP) every process of the instance, listing them
// again until no new one appeared, and waits until each is stopped.
func (s *procs) freeze(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	stopped := map[int]bool{}
	for _, pid := range s.frozen {
		stopped[pid] = true
	}
	for round := 0; ; round++ {
		fresh := 0
		for _, p := range s.list() {
			if stopped[p.pid] {
				continue
			}
			if err := syscall.Kill(p.pid, syscall.SIGSTOP); err != nil && err != syscall.ESRCH {
				t.Fatalf("freeze %s: SIGSTOP %d (%s): %v", s.name, p.pid, p.comm, err)
			}
			stopped[p.pid] = true
			s.frozen = append(s.frozen, p.pid)
			fresh++
		}
		if fresh == 0 {
			break
		}
		if round == 10 {
			t.Fatalf("freeze %s: new processes still appearing after %d rounds", s.name, round)
		}
	}
	if len(s.frozen) == 0 {
		t.Fatalf("freeze %s: not running", s.name)
	}
	if err := waitState(s.frozen, true, 10*time.Second); err != nil {
		t.Fatalf("freeze %s: %v", s.name, err)
	}
}

// thaw continues (SIGCONT) every process freeze stopped and waits until
// none is stopped; it does nothing when none is.
func (s *procs) thaw(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.thawLocked(); err != nil {
		t.Errorf("thaw %s: %v", s.name, err)
	}
}

func (s *procs) thawLocked() error {
	if len(s.frozen) == 0 {
		return nil
	}
	for _, pid := range s.frozen {
		syscall.Kill(pid, syscall.SIGCONT) // ESRCH: it died meanwhile
	}
	pids := s.frozen
	s.frozen = nil
	return waitState(pids, false, 10*time.Second)
}

// isFrozen reports whether Freeze stopped the instance and Thaw has not
// continued it yet.
func (s *procs) isFrozen() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.frozen) > 0
}

// kill thaws the instance, sends SIGKILL to each of its processes and
// waits, at most 30 s, until they are gone, not even zombies: a
// postmaster's lock file names its pid, and a zombie's pid still answers
// kill(pid, 0), so a new postmaster would refuse to start.
func (s *procs) kill() error {
	s.mu.Lock()
	s.thawLocked() // a stopped process dies of SIGKILL too, but not its pending SIGCONT waits
	s.mu.Unlock()
	list := s.list()
	for _, p := range list {
		syscall.Kill(p.pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, p := range list {
		for {
			if _, err := readProc(p.pid); err != nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("kill %s: process %d (%s) still there 30 s after SIGKILL", s.name, p.pid, p.comm)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return nil
}

// waitState waits, at most d, until every live process of pids is
// stopped (stopped true) or none is.
func waitState(pids []int, stopped bool, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		var wrong []string
		for _, pid := range pids {
			p, err := readProc(pid)
			if err != nil || p.state == 'Z' || p.state == 'X' {
				continue // gone
			}
			if (p.state == 'T') != stopped {
				wrong = append(wrong, fmt.Sprintf("%d (%s) in state %c", p.pid, p.comm, p.state))
			}
		}
		if len(wrong) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %v: %s", d, strings.Join(wrong, ", "))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// environHas reports whether the environment of pid holds kv (NAME=value).
func environHas(pid int, kv string) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
	if err != nil {
		return false
	}
	for _, e := range bytes.Split(b, []byte{0}) {
		if string(e) == kv {
			return true
		}
	}
	return false
}
