package chaos

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The private services a case kills. Each has its own port, data
// directory and logs under the case's t.TempDir(), and is stopped at the
// end of the case at the latest; the shared services on the standard ports
// are never touched.

// freePort returns a TCP port on 127.0.0.1 that nothing listened on a
// moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// waitPort waits until 127.0.0.1:port accepts connections, at most d.
func waitPort(port int, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("port %d not open after %v: %w", port, d, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// redisServer is a private redis-server without persistence: a restart
// after SIGKILL comes back empty.
type redisServer struct {
	t    *testing.T
	port int
	dir  string
	cmd  *exec.Cmd
}

func startRedis(t *testing.T) *redisServer {
	t.Helper()
	needTools(t, "redis-server")
	r := &redisServer{t: t, port: freePort(t), dir: t.TempDir()}
	r.start()
	t.Cleanup(r.kill)
	return r
}

// url is the redis:// URL of the server.
func (r *redisServer) url() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", r.port) }

// start starts the server (empty) and waits for its port.
func (r *redisServer) start() {
	r.t.Helper()
	log, err := os.OpenFile(filepath.Join(r.dir, "redis.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		r.t.Fatal(err)
	}
	defer log.Close()
	r.cmd = exec.Command("redis-server", "--port", strconv.Itoa(r.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", r.dir)
	r.cmd.Stdout, r.cmd.Stderr = log, log
	if err := r.cmd.Start(); err != nil {
		r.t.Fatalf("start redis-server: %v", err)
	}
	if err := waitPort(r.port, 10*time.Second); err != nil {
		r.t.Fatalf("redis-server: %v", err)
	}
}

// kill sends SIGKILL and waits for the process.
func (r *redisServer) kill() {
	if r.cmd == nil {
		return
	}
	r.cmd.Process.Kill()
	r.cmd.Wait()
	r.cmd = nil
}

// rabbitNode is a second RabbitMQ node with its own name, ports, data
// and log directories, cookie and no plugins.
type rabbitNode struct {
	t    *testing.T
	name string // chaosN@localhost
	port int
	dir  string
	env  []string
	cmd  *exec.Cmd
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

func startRabbit(t *testing.T) *rabbitNode {
	t.Helper()
	needTools(t, "rabbitmq-server", "rabbitmqctl")
	n := &rabbitNode{
		t:    t,
		name: fmt.Sprintf("chaos%d_%d@localhost", os.Getpid(), rabbitCount.Add(1)),
		port: freePort(t),
		dir:  t.TempDir(),
	}
	dist := freePort(t)
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
	)
	n.start()
	t.Cleanup(n.kill)
	return n
}

// url is the amqp:// URL of the node's default vhost.
func (n *rabbitNode) url() string { return fmt.Sprintf("amqp://guest:guest@127.0.0.1:%d/", n.port) }

// ctl runs rabbitmqctl against the node.
func (n *rabbitNode) ctl(timeout time.Duration, args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, rabbitBin("rabbitmqctl"), append([]string{"-n", n.name, "-q"}, args...)...)
	cmd.Env = n.env
	cmd.Dir = n.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("rabbitmqctl %s: %v: %s", strings.Join(args, " "), err, lastLines(string(out), 3))
	}
	return nil
}

// start starts the node in the background and waits until it has booted
// (await_startup; it fails until the node has registered, so it is
// retried).
func (n *rabbitNode) start() {
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
			n.t.Fatalf("rabbitmq-server %s exited: %v: %s", n.name, werr, lastLines(readFile(filepath.Join(n.dir, "server.log")), 10))
		default:
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("rabbitmq-server %s did not boot in 90 s: %v", n.name, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := waitPort(n.port, 10*time.Second); err != nil {
		n.t.Fatal(err)
	}
}

// stop stops the node with rabbitmqctl stop and waits for its process.
func (n *rabbitNode) stop() {
	n.t.Helper()
	if n.cmd == nil {
		return
	}
	if err := n.ctl(60*time.Second, "stop"); err != nil {
		n.t.Logf("stop %s: %v; killing it", n.name, err)
		syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
	}
	<-n.exited
	n.cmd = nil
}

// kill ends the node: SIGKILL to the process group started for it.
func (n *rabbitNode) kill() {
	if n.cmd == nil {
		return
	}
	syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
	<-n.exited
	n.cmd = nil
}

// pgCluster is a private PostgreSQL cluster made with pg_createcluster,
// with trust authentication on its own port, its data and log under the
// case's temporary directory; it is dropped at the end of the case.
type pgCluster struct {
	t       *testing.T
	version string
	name    string
	port    int
}

var pgCount atomic.Int32

func startPostgres(t *testing.T) *pgCluster {
	t.Helper()
	needTools(t, "pg_createcluster", "pg_ctlcluster", "pg_dropcluster")
	versions, _ := filepath.Glob("/etc/postgresql/*")
	if len(versions) == 0 {
		t.Skip("pg_createcluster is installed but /etc/postgresql has no version")
	}
	sort.Strings(versions)
	c := &pgCluster{
		t:       t,
		version: filepath.Base(versions[len(versions)-1]),
		name:    fmt.Sprintf("chaos%d_%d", os.Getpid(), pgCount.Add(1)),
		port:    freePort(t),
	}
	// The postgres user must reach the data directory.
	dir := t.TempDir()
	for d := dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	out, err := exec.Command("pg_createcluster", c.version, c.name, "-p", strconv.Itoa(c.port),
		"-d", filepath.Join(dir, "data"), "-l", filepath.Join(dir, "postgresql.log"),
		"--", "--auth=trust").CombinedOutput()
	if err != nil {
		t.Fatalf("pg_createcluster: %v: %s", err, lastLines(string(out), 5))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("pg_dropcluster", "--stop", c.version, c.name).CombinedOutput(); err != nil {
			t.Errorf("pg_dropcluster %s: %v: %s", c.name, err, out)
		}
	})
	c.start()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, c.adminURL())
	if err != nil {
		t.Fatalf("connect to %s: %v", c.name, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE parley"); err != nil {
		t.Fatalf("create database: %v", err)
	}
	return c
}

func (c *pgCluster) adminURL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
}

// url is the database the nodes use.
func (c *pgCluster) url() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/parley?sslmode=disable", c.port)
}

func (c *pgCluster) ctl(action string, extra ...string) {
	c.t.Helper()
	args := append([]string{"--skip-systemctl-redirect"}, extra...)
	args = append(args, c.version, c.name, action)
	if out, err := exec.Command("pg_ctlcluster", args...).CombinedOutput(); err != nil {
		c.t.Fatalf("pg_ctlcluster %s %s: %v: %s", c.name, action, err, out)
	}
}

// start starts the cluster and waits for its port.
func (c *pgCluster) start() {
	c.t.Helper()
	c.ctl("start")
	if err := waitPort(c.port, 30*time.Second); err != nil {
		c.t.Fatal(err)
	}
}

// stop stops the cluster, disconnecting every client (fast mode).
func (c *pgCluster) stop() { c.t.Helper(); c.ctl("stop", "-m", "fast") }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
