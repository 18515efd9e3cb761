package servicetest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	amqp "github.com/rabbitmq/amqp091-go"
	goredis "github.com/redis/go-redis/v9"
)

// gone reports whether none of pids is a process (not even a zombie).
func gone(pids []int) bool {
	for _, pid := range pids {
		if _, err := readProc(pid); err == nil {
			return false
		}
	}
	return true
}

// cleanupThaws runs freeze in a subtest that ends frozen, and checks that
// its cleanup ended every process of the instance (a stopped process
// would stay: pg_dropcluster and rabbitmqctl wait on it, and nothing
// continues it).
func cleanupThaws(t *testing.T, freeze func(t *testing.T) []int) {
	var pids []int
	t.Run("frozen at the end", func(t *testing.T) { pids = freeze(t) })
	if len(pids) == 0 {
		t.Fatal("the frozen instance had no process")
	}
	// A stopped postmaster's last zombie waits for its reaper.
	for deadline := time.Now().Add(30 * time.Second); !gone(pids); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("processes %v of an instance left frozen still there 30 s after its test's cleanup", pids)
		}
	}
}

func TestRedisLifecycle(t *testing.T) {
	srv := StartRedis(t)
	opt, err := goredis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	opt.ContextTimeoutEnabled = true
	rdb := goredis.NewClient(opt)
	defer rdb.Close()
	ctx := context.Background()
	set := func() error { return rdb.Set(ctx, "k", "v", 0).Err() }
	exists := func() (int64, error) { return rdb.Exists(ctx, "k").Result() }
	for _, step := range []struct {
		name string
		down func()
	}{
		{"Kill", srv.Kill},
		{"Stop", srv.Stop},
	} {
		if err := set(); err != nil {
			t.Fatalf("SET before %s: %v", step.name, err)
		}
		pids := srv.PIDs()
		step.down()
		if !gone(pids) {
			t.Errorf("after %s: processes %v still there", step.name, pids)
		}
		if _, err := exists(); err == nil {
			t.Errorf("EXISTS after %s succeeded", step.name)
		}
		srv.Start()
		if n, err := exists(); err != nil || n != 0 {
			t.Errorf("EXISTS k after %s and Start = %d, %v; want 0 (empty, on the same port)", step.name, n, err)
		}
	}
	if err := set(); err != nil {
		t.Fatal(err)
	}
	srv.Restart()
	if n, err := exists(); err != nil || n != 0 {
		t.Errorf("EXISTS k after Restart = %d, %v; want 0 (empty, on the same port)", n, err)
	}
	cleanupThaws(t, func(t *testing.T) []int {
		s := StartRedis(t)
		s.Freeze()
		return s.PIDs()
	})
}

func TestPostgresLifecycle(t *testing.T) {
	pg := StartPostgres(t)
	ctx := context.Background()
	exec := func(sql string) error {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, pg.URL())
		if err != nil {
			return err
		}
		defer c.Close(context.Background())
		_, err = c.Exec(ctx, sql)
		return err
	}
	if err := exec("CREATE TABLE t (n int); INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	pids := pg.PIDs()
	pg.Kill()
	if !gone(pids) {
		t.Errorf("after Kill: processes %v still there", pids)
	}
	if err := exec("SELECT 1"); err == nil {
		t.Error("a query after Kill succeeded")
	}
	pg.Start() // crash recovery
	if err := exec("INSERT INTO t VALUES (2)"); err != nil {
		t.Errorf("after Kill and Start: %v", err)
	}
	pg.Restart()
	if err := exec("SELECT n FROM t WHERE n = 2"); err != nil {
		t.Errorf("after Restart: %v", err)
	}
	cleanupThaws(t, func(t *testing.T) []int {
		p := StartPostgres(t)
		p.Freeze()
		return p.PIDs()
	})
}

func TestRabbitLifecycle(t *testing.T) {
	n := StartRabbit(t)
	dial := func() error {
		c, err := amqp.DialConfig(n.URL(), amqp.Config{Dial: amqp.DefaultDial(5 * time.Second)})
		if err != nil {
			return err
		}
		return c.Close()
	}
	pids := n.PIDs()
	n.Kill()
	if !gone(pids) { // the node's epmd too
		t.Errorf("after Kill: processes %v still there", pids)
	}
	if err := dial(); err == nil {
		t.Error("a connection after Kill succeeded")
	}
	n.Start()
	if err := dial(); err != nil {
		t.Errorf("after Kill and Start: %v", err)
	}
	n.Restart()
	if err := dial(); err != nil {
		t.Errorf("after Restart: %v", err)
	}
	cleanupThaws(t, func(t *testing.T) []int {
		r := StartRabbit(t)
		r.Freeze()
		return r.PIDs()
	})
}
