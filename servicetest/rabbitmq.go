package servicetest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Rabbit is a private RabbitMQ node with its own name, ports, epmd (the
// Erlang port mapper, on a port of its own), data and log directories,
// cookie and no plugins. Its processes are the rabbitmq-server script,
// beam.smp and its helpers (erl_child_setup, inet_gethost) and its epmd.
type Rabbit struct {
	t     testing.TB
	name  string // chaosN@localhost
	port  int
	epmd  int // the port of the node's own epmd
	dir   string
	env   []string
	procs procs
	cmd   *exec.Cmd
	// exited receives the process's end once it has been started.
	exited chan error
}

// rabbitCount numbers the private RabbitMQ nodes of this process.
var rabbitCount atomic.Int32

// rabbitBin finds a RabbitMQ script: Debian's /usr/sbin wrappers switch
// to the rabbitmq user, which cannot write the test's directories, so the
// scripts they wrap are used when present.
func rabbitBin(name string) string {
	if p := filepath.Join("/usr/lib/rabbitmq/bin", name); fileExists(p) {
		return p
	}
	return name
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// StartRabbit starts a private RabbitMQ node and waits until it has
// booted; it is thawed and killed, with its epmd, at the end of the test.
func StartRabbit(t testing.TB) *Rabbit {
	t.Helper()
	NeedTools(t, "rabbitmq-server", "rabbitmqctl")
	n := &Rabbit{
		t:    t,
		name: fmt.Sprintf("chaos%d_%d@localhost", os.Getpid(), rabbitCount.Add(1)),
		port: FreePort(t),
		epmd: FreePort(t),
		dir:  t.TempDir(),
	}
	epmdEnv := "ERL_EPMD_PORT=" + strconv.Itoa(n.epmd)
	n.procs = procs{name: "rabbitmq " + n.name, root: n.pid, extra: func(pid int, comm string) bool {
		// epmd left the tree (it runs as a daemon); the node's CLI
		// processes share its variable but are no epmd.
		return comm == "epmd" && environHas(pid, epmdEnv)
	}}
	dist := FreePort(t)
	home := filepath.Join(n.dir, "home")
	plugins := filepath.Join(n.dir, "enabled_plugins")
	conf := filepath.Join(n.dir, "rabbitmq.conf")
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	// The node and its CLI find the same cookie in the same HOME.
	cookie := fmt.Sprintf("CHAOSCOOKIE%d%d", os.Getpid(), time.Now().UnixNano())
	must(t, os.WriteFile(filepath.Join(home, ".erlang.cookie"), []byte(cookie), 0o400))
	must(t, os.WriteFile(plugins, []byte("[].\n"), 0o644))
	// The machine's rabbitmq.conf names the shared listener: a config of
	// our own replaces it.
	must(t, os.WriteFile(conf, []byte(fmt.Sprintf("listeners.tcp.local = 127.0.0.1:%d\n", n.port)), 0o644))
	n.env = append(os.Environ(),
		"HOME="+home,
		"RABBITMQ_NODENAME="+n.name,
		"RABBITMQ_NODE_PORT="+strconv.Itoa(n.port),
		"RABBITMQ_DIST_PORT="+strconv.Itoa(dist),
		"RABBITMQ_MNESIA_BASE="+filepath.Join(n.dir, "mnesia"),
		"RABBITMQ_LOG_BASE="+filepath.Join(n.dir, "log"),
		"RABBITMQ_ENABLED_PLUGINS_FILE="+plugins,
		"RABBITMQ_CONFIG_FILE="+conf,
		// An epmd of its own: the shared one (port 4369) is the shared
		// RabbitMQ's, never frozen or killed here.
		epmdEnv,
	)
	n.Start()
	t.Cleanup(n.Kill)
	return n
}

// URL is the amqp:// URL of the node's default vhost.
func (n *Rabbit) URL() string { return fmt.Sprintf("amqp://guest:guest@127.0.0.1:%d/", n.port) }

// ctl runs rabbitmqctl against the node.
func (n *Rabbit) ctl(timeout time.Duration, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, rabbitBin("rabbitmqctl"), append([]string{"-n", n.name, "-q"}, args...)...)
	cmd.Env = n.env
	cmd.Dir = n.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("rabbitmqctl %s: %v: %s", strings.Join(args, " "), err, LastLines(string(out), 3))
	}
	return nil
}

// Start starts the node in the background and waits until it has booted
// (await_startup; it fails until the node has registered, so it is
// retried).
func (n *Rabbit) Start() {
	n.t.Helper()
	log, err := os.OpenFile(filepath.Join(n.dir, "server.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		n.t.Fatal(err)
	}
	defer log.Close()
	n.cmd = exec.Command(rabbitBin("rabbitmq-server"))
	n.cmd.Env = n.env
	n.cmd.Dir = n.dir
	n.cmd.Stdout, n.cmd.Stderr = log, log
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := n.cmd.Start(); err != nil {
		n.t.Fatalf("start rabbitmq-server: %v", err)
	}
	exited := make(chan error, 1)
	go func(c *exec.Cmd) { exited <- c.Wait() }(n.cmd)
	n.exited = exited
	deadline := time.Now().Add(90 * time.Second)
	for {
		err := n.ctl(20*time.Second, "await_startup")
		if err == nil {
			break
		}
		select {
		case werr := <-exited:
			n.t.Fatalf("rabbitmq-server %s exited: %v: %s", n.name, werr, LastLines(readFile(filepath.Join(n.dir, "server.log")), 10))
		default:
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("rabbitmq-server %s did not boot in 90 s: %v", n.name, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := WaitPort(n.port, 10*time.Second); err != nil {
		n.t.Fatal(err)
	}
}

func (n *Rabbit) pid() int {
	if n.cmd == nil {
		return 0
	}
	return n.cmd.Process.Pid
}

// Stop thaws the node, stops it with rabbitmqctl stop and waits for its
// process; its epmd stays, for Start.
func (n *Rabbit) Stop() {
	n.t.Helper()
	if n.cmd == nil {
		return
	}
	n.procs.thaw(n.t)
	if err := n.ctl(60*time.Second, "stop"); err != nil {
		n.t.Logf("stop %s: %v; killing it", n.name, err)
		syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
	}
	<-n.exited
	n.cmd = nil
}

// Kill ends the node: SIGKILL (after a thaw) to the process group
// started for it, every process of the node and its epmd, which Start
// starts again.
func (n *Rabbit) Kill() {
	if err := n.procs.kill(); err != nil { // epmd too, also after Stop
		n.t.Error(err)
	}
	if n.cmd == nil {
		return
	}
	syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
	<-n.exited
	n.cmd = nil
}

// Restart stops the node and starts it again, on the same ports and data
// directory (its queues and vhosts are kept).
func (n *Rabbit) Restart() {
	n.t.Helper()
	n.Stop()
	n.Start()
}

// Freeze stops (SIGSTOP) every process of the node, beam.smp, its
// helpers and its epmd, and waits until they are stopped: the
// connections and ports stay open, nothing answers until Thaw.
func (n *Rabbit) Freeze() { n.t.Helper(); n.procs.freeze(n.t) }

// Thaw continues a frozen node (SIGCONT) and waits until every process
// runs; it does nothing when the node is not frozen.
func (n *Rabbit) Thaw() { n.t.Helper(); n.procs.thaw(n.t) }

// PIDs returns the pids of the node's processes, the rabbitmq-server
// script first, for a test that checks them.
func (n *Rabbit) PIDs() []int { return n.procs.pids() }
