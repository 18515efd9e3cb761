package servicetest

import (
	"context"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	amqp "github.com/rabbitmq/amqp091-go"
	goredis "github.com/redis/go-redis/v9"
)

// psState returns, from ps, the command and state of each pid still
// there.
func psState(t *testing.T, pids []int) map[int][2]string {
	t.Helper()
	var list []string
	for _, pid := range pids {
		list = append(list, strconv.Itoa(pid))
	}
	// ps exits 1 when a pid is gone: its output is still the others.
	out, _ := exec.Command("ps", "-o", "pid=,stat=,comm=", "-p", strings.Join(list, ",")).Output()
	got := map[int][2]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		pid, err := strconv.Atoi(f[0])
		if err != nil {
			t.Fatalf("ps: %q", line)
		}
		got[pid] = [2]string{f[2], f[1]}
	}
	return got
}

// checkProcs checks with ps that every pid is there and stopped (frozen
// true) or that none of those still there is stopped (a thawed instance
// runs on: a worker that was frozen may finish and exit, as PostgreSQL's
// autovacuum workers do), and that the processes include the commands in
// want.
func checkProcs(t *testing.T, pids []int, frozen bool, want ...string) {
	t.Helper()
	ps := psState(t, pids)
	var comms []string
	for _, pid := range pids {
		s, ok := ps[pid]
		if !ok {
			if frozen {
				t.Errorf("process %d: not in ps", pid)
			}
			continue
		}
		comms = append(comms, s[0])
		if stopped := strings.HasPrefix(s[1], "T"); stopped != frozen {
			t.Errorf("process %d (%s): state %s, want stopped %v", pid, s[0], s[1], frozen)
		}
	}
	for _, w := range want {
		if !slices.Contains(comms, w) {
			t.Errorf("processes %v: no %s", comms, w)
		}
	}
}

// The freeze tests: a frozen instance keeps its port open and answers
// nothing (a call with a short timeout fails), every one of its processes
// stopped; after Thaw it answers again, and none is stopped.

func TestRedisFreeze(t *testing.T) {
	srv := StartRedis(t)
	opt, err := goredis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	opt.ContextTimeoutEnabled = true
	rdb := goredis.NewClient(opt)
	defer rdb.Close()
	ping := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		return rdb.Ping(ctx).Err()
	}
	if err := ping(); err != nil {
		t.Fatalf("PING before the freeze: %v", err)
	}
	srv.Freeze()
	defer srv.Thaw()
	pids := srv.PIDs()
	checkProcs(t, pids, true, "redis-server")
	if err := ping(); err == nil {
		t.Error("PING of a frozen redis-server succeeded")
	}
	srv.Thaw()
	checkProcs(t, pids, false)
	if err := ping(); err != nil {
		t.Errorf("PING after Thaw: %v", err)
	}
}

func TestPostgresFreeze(t *testing.T) {
	pg := StartPostgres(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var backend int
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		t.Fatal(err)
	}
	connect := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, pg.URL())
		if err != nil {
			return err
		}
		defer c.Close(context.Background())
		return c.Ping(ctx)
	}
	pg.Freeze()
	defer pg.Thaw()
	pids := pg.PIDs()
	if !slices.Contains(pids, backend) {
		t.Errorf("PIDs() = %v: no backend %d of an open connection", pids, backend)
	}
	if len(pids) < 3 { // the postmaster, a backend and the background processes
		t.Errorf("PIDs() = %v: want the postmaster and its children", pids)
	}
	checkProcs(t, pids, true, "postgres")
	if err := connect(); err == nil {
		t.Error("a connection to a frozen PostgreSQL succeeded")
	}
	pg.Thaw()
	checkProcs(t, pids, false)
	if err := connect(); err != nil {
		t.Errorf("connect after Thaw: %v", err)
	}
	if _, err := conn.Exec(ctx, "SELECT 1"); err != nil {
		t.Errorf("the connection opened before the freeze, after Thaw: %v", err)
	}
}

func TestRabbitFreeze(t *testing.T) {
	n := StartRabbit(t)
	dial := func() error {
		c, err := amqp.DialConfig(n.URL(), amqp.Config{Dial: amqp.DefaultDial(2 * time.Second)})
		if err != nil {
			return err
		}
		return c.Close()
	}
	if err := dial(); err != nil {
		t.Fatalf("dial before the freeze: %v", err)
	}
	n.Freeze()
	defer n.Thaw()
	pids := n.PIDs()
	checkProcs(t, pids, true, "beam.smp", "erl_child_setup", "epmd")
	if err := dial(); err == nil {
		t.Error("a connection to a frozen RabbitMQ succeeded")
	}
	n.Thaw()
	checkProcs(t, pids, false)
	if err := dial(); err != nil {
		t.Errorf("dial after Thaw: %v", err)
	}
}
