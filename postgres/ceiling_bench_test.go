package postgres_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"parley"
	"parley/parleytest"
	"parley/postgres"
	"parley/postgres/pgtest"
)

// ceilingBatch is the messages of one transaction of BenchmarkCeiling: the
// store's full batch (groupcommit.DefaultMaxBatch).
const ceilingBatch = 256

// BenchmarkCeiling is what PostgreSQL itself allows for durable message
// writes on this machine, the ceiling BenchmarkSendParallel is measured
// against (run both in one run, alternating, and compare: BENCHMARKS.md).
// It is the bare program: writers goroutines, each with its own
// connection, loop over transactions of one multi-row INSERT of 256
// messages (unnest of arrays, the store's message rows: id, sender, name,
// a 57-byte body, no client id, the search vector computed by PostgreSQL)
// and COMMIT, with synchronous_commit on, into the store's schema with all
// its indexes, over 100 rooms. Each writer owns a quarter of the rooms and
// numbers their seqs itself: no room row is read, locked or updated, no
// member checked, no read position moved, nothing returned. That is all the
// store adds, and what the ratio of the two measures.
func BenchmarkCeiling(b *testing.B) {
	for _, writers := range []int{1, 4} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			benchmarkCeiling(b, writers)
		})
	}
}

func benchmarkCeiling(b *testing.B, writers int) {
	const nRooms = 100
	url := pgtest.Schema(b)
	// The store makes the schema (every index of today's migrations), the
	// users and the rooms, then steps aside.
	s := mustOpen(b, postgres.Config{URL: url})
	users := parleytest.MustCreateUsers(b, s, "sender", nRooms)
	rooms := make([]parley.Room, nRooms)
	for i := range rooms {
		rooms[i] = parleytest.MustCreateRoom(b, s, users[i], fmt.Sprintf("room%d", i), 0)
	}
	s.Close()

	ctx := context.Background()
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		b.Fatal(err)
	}
	pc.MaxConns = int32(writers)
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	var sc string
	if err := pool.QueryRow(ctx, "SHOW synchronous_commit").Scan(&sc); err != nil || sc != "on" {
		b.Fatalf("synchronous_commit = %q (%v): the ceiling is measured durable, as the store writes", sc, err)
	}
	const insert = `INSERT INTO messages (room_id, seq, id, sender_id, sender_name, body, client_id, sent_at, tsv)
		SELECT r, q, i, s, n, t, '', a, to_tsvector('simple', t)
		FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[])
			AS x (r, q, i, s, n, t, a)`

	batches := (b.N + ceilingBatch - 1) / ceilingBatch
	var next atomic.Int64 // batches taken
	var commitTime atomic.Int64
	errs := make(chan error, writers)
	var wg sync.WaitGroup
	cpu := startCPU(b, pool)
	b.ResetTimer()
	start := time.Now()
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := pool.Acquire(ctx)
			if err != nil {
				errs <- err
				return
			}
			defer conn.Release()
			var mine []int // the rooms this writer numbers
			for i := w; i < nRooms; i += writers {
				mine = append(mine, i)
			}
			seq := make([]int64, nRooms)
			col := func() [7]any {
				return [7]any{make([]string, 0, ceilingBatch), make([]int64, 0, ceilingBatch), make([]string, 0, ceilingBatch),
					make([]string, 0, ceilingBatch), make([]string, 0, ceilingBatch), make([]string, 0, ceilingBatch),
					make([]time.Time, 0, ceilingBatch)}
			}
			k := 0
			for next.Add(1) <= int64(batches) {
				c := col()
				rs, qs, ids := c[0].([]string), c[1].([]int64), c[2].([]string)
				ss, ns, ts, as := c[3].([]string), c[4].([]string), c[5].([]string), c[6].([]time.Time)
				now := time.Now()
				for range ceilingBatch {
					r := mine[k%len(mine)]
					k++
					seq[r]++
					rs, qs, ids = append(rs, rooms[r].ID), append(qs, seq[r]), append(ids, parley.NewID())
					ss, ns = append(ss, users[r].ID), append(ns, users[r].Name)
					ts, as = append(ts, "a message of some typical length, about sixty bytes long."), append(as, now)
				}
				t0 := time.Now()
				err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
					_, err := tx.Exec(ctx, insert, rs, qs, ids, ss, ns, ts, as)
					return err
				})
				commitTime.Add(int64(time.Since(t0)))
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	n := batches * ceilingBatch
	b.ReportMetric(float64(n)/elapsed, "msgs/s")
	b.ReportMetric(float64(batches)/elapsed, "commits/s")
	b.ReportMetric(float64(commitTime.Load())/float64(batches)/1e3, "µs/commit")
	cpu.report(b, n)
}

// cpuMeter measures the CPU time of a benchmark: this process's (getrusage)
// and that of the PostgreSQL backends serving the benchmark's database,
// from /proc when PostgreSQL runs on this machine. PostgreSQL's shared
// processes (WAL writer, checkpointer, autovacuum) are not counted.
type cpuMeter struct {
	pool    *pgxpool.Pool
	self    time.Duration
	backend map[int]time.Duration
}

func startCPU(b *testing.B, pool *pgxpool.Pool) *cpuMeter {
	m := &cpuMeter{pool: pool, self: selfCPU()}
	m.backend = backendCPU(b, pool)
	return m
}

// report adds the CPU per message since startCPU: go-cpu-µs/msg for this
// process, pg-cpu-µs/msg for the database's backends (when /proc shows
// them).
func (m *cpuMeter) report(b *testing.B, msgs int) {
	self := selfCPU() - m.self
	var pg time.Duration
	after := backendCPU(b, m.pool)
	for pid, t := range after {
		pg += t - m.backend[pid] // a backend started during the run: all of it
	}
	b.ReportMetric(float64(self.Microseconds())/float64(msgs), "go-cpu-µs/msg")
	if len(after) > 0 {
		b.ReportMetric(float64(pg.Microseconds())/float64(msgs), "pg-cpu-µs/msg")
	}
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// backendCPU returns the CPU time so far of each backend connected to the
// pool's database, none when /proc does not have them.
func backendCPU(b *testing.B, pool *pgxpool.Pool) map[int]time.Duration {
	rows, err := pool.Query(context.Background(),
		"SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend'")
	if err != nil {
		b.Fatal(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		b.Fatal(err)
	}
	const hz = 100 // USER_HZ, the unit of /proc/PID/stat's times on Linux
	out := map[int]time.Duration{}
	for _, pid := range pids {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// Fields after the command (in parentheses): state is field 3,
		// utime 14, stime 15.
		f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		out[int(pid)] = time.Duration(u+s) * time.Second / hz
	}
	return out
}
