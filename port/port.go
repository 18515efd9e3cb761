package port

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Config configures Run and Verify. Zero fields take the documented
// defaults.
type Config struct {
	// Source is the SQLite database of a stopped node, at the newest
	// schema, opened read-only (sqlite.OpenReadOnly); the caller holds
	// its data directory's lock. Required.
	Source *sql.DB
	// Target is the PostgreSQL URL, postgres://…; parameters pgx does not
	// know are session settings, such as search_path. Required.
	Target string
	// Migrate brings the target to the current schema (postgres.Migrate).
	// Run calls it once it has found the target empty or holding this
	// source's unfinished port, before it copies anything. Required by
	// Run.
	Migrate func(ctx context.Context) error
	// Batch is the most rows of one transaction. Default DefaultBatch.
	Batch int
	// Writers is how many connections copy the messages at once, each
	// its own range of them: PostgreSQL computes the search vectors and
	// maintains the indexes on as many cores. Default DefaultWriters.
	// A resumed port keeps the ranges of its first run.
	Writers int
	// Progress, when set, is called after each committed batch, and
	// once more at the end of the copy.
	Progress func(Progress)
	// Log, when set, gets a line for each step (checks, resume, verify).
	Log io.Writer
	// StopAfter, when positive, makes Run return ErrStopped after that
	// many committed batches: a test's stand-in for a kill.
	StopAfter int
}

// DefaultBatch is the default Config.Batch.
const DefaultBatch = 20000

// DefaultWriters is the default Config.Writers.
const DefaultWriters = 2

// ErrStopped is Run's error when Config.StopAfter stopped it.
var ErrStopped = errors.New("port: stopped after the batches asked for (StopAfter)")

// Progress is how far a copy is.
type Progress struct {
	Table       string        // the table being copied
	Done, Total int64         // rows copied (this run and earlier ones) and to copy, all tables
	Messages    int64         // messages copied by this run
	Elapsed     time.Duration // since this run began
	Final       bool          // the copy is over
}

// Rate is the messages a second this run has copied.
func (p Progress) Rate() float64 {
	if p.Elapsed <= 0 {
		return 0
	}
	return float64(p.Messages) / p.Elapsed.Seconds()
}

// ETA is the time the rest of the copy will take at this run's pace over
// all rows; zero when unknown.
func (p Progress) ETA() time.Duration {
	if p.Done <= 0 || p.Elapsed <= 0 || p.Done >= p.Total {
		return 0
	}
	return time.Duration(float64(p.Elapsed) * float64(p.Total-p.Done) / float64(p.Done))
}

// Result is what Run did.
type Result struct {
	Resumed  bool             // an unfinished port of this source was there
	Already  bool             // the target held this source's finished port: nothing copied
	Copied   map[string]int64 // rows copied by this run, by table
	Messages int64            // messages copied by this run
	Took     time.Duration    // the copy (not the checks nor the verification)
	Report   Report           // the verification
}

// Errors of Run, wrapped with what the target holds.
var (
	// ErrForeign: the target holds data that is not an unfinished port
	// of this source. Nothing was changed.
	ErrForeign = errors.New("the target holds other data")
	// ErrBusy: another port holds the target's port lock.
	ErrBusy = errors.New("another parley port is running on the target")
	// ErrMismatch: the verification found the two stores different.
	ErrMismatch = errors.New("the stores differ")
)

// portLockClass is the first key of the session advisory lock a port holds
// on its target, the second being the hash of the schema.
const portLockClass = 0x706f7274 // "port"

// Run copies the source into the target, resuming an unfinished port of
// the same source, then verifies both (Verify) and marks the port
// finished. A target that holds this source's finished port is only
// verified again. It fails with ErrForeign (nothing changed), ErrBusy,
// ErrMismatch (Result.Report says where) or ErrStopped, wrapped.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.Writers <= 0 {
		cfg.Writers = DefaultWriters
	}
	res := Result{Copied: map[string]int64{}}
	conn, err := connect(ctx, cfg.Target)
	if err != nil {
		return res, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var locked bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, hashtext(current_schema()))`, portLockClass).Scan(&locked); err != nil {
		return res, fmt.Errorf("port: lock the target: %w", err)
	}
	if !locked {
		return res, fmt.Errorf("port: %w", ErrBusy)
	}
	// Unlocked before the close: a closed connection's locks go only
	// once its backend has seen the close, and a run right after this
	// one must find the target free.
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1, hashtext(current_schema()))`, portLockClass)
	fp, total, err := fingerprint(ctx, cfg.Source)
	if err != nil {
		return res, err
	}
	st, err := targetState(ctx, conn)
	if err != nil {
		return res, err
	}
	switch {
	case st.port && st.fingerprint != fp:
		return res, fmt.Errorf("port: %w: the port of another source (or of this one before it changed), started %s: "+
			"port into an empty database, or drop this one's tables and port again", ErrForeign, st.started.Format(time.RFC3339))
	case !st.port && st.data != "":
		return res, fmt.Errorf("port: %w: %s: port into an empty database (or schema)", ErrForeign, st.data)
	case st.port && st.finished:
		res.Already = true
		logf(cfg.Log, "the target holds this source's port, finished %s: verifying it again", st.finishedAt.Format(time.RFC3339))
		res.Report, err = Verify(ctx, cfg)
		return res, err
	case st.port:
		res.Resumed = true
		logf(cfg.Log, "resuming the port started %s", st.started.Format(time.RFC3339))
	}
	if err := cfg.Migrate(ctx); err != nil {
		return res, err
	}
	if err := beginPort(ctx, conn, fp, total); err != nil {
		return res, err
	}
	start := time.Now()
	if err := copyAll(ctx, conn, cfg, &res, start); err != nil {
		return res, err
	}
	res.Took = time.Since(start)
	// Fresh statistics, for the planner of the first cluster node.
	if _, err := conn.Exec(ctx, `ANALYZE `+strings.Join(TableNames(), ", ")); err != nil {
		return res, fmt.Errorf("port: analyze: %w", err)
	}
	res.Report, err = verify(ctx, conn, cfg)
	if err != nil {
		return res, err
	}
	if _, err := conn.Exec(ctx, `SET synchronous_commit = on`); err != nil {
		return res, fmt.Errorf("port: %w", err)
	}
	if _, err := conn.Exec(ctx, `UPDATE parley_port SET finished_at = now(); DROP TABLE parley_port_progress`); err != nil {
		return res, fmt.Errorf("port: mark finished: %w", err)
	}
	return res, nil
}

// connect opens the port's one connection to the target.
func connect(ctx context.Context, url string) (*pgx.Conn, error) {
	cc, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("port: target: %w", err)
	}
	if cc.ConnectTimeout == 0 {
		cc.ConnectTimeout = 10 * time.Second
	}
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("port: target %s@%s/%s: %w", cc.User, cc.Host, cc.Database, err)
	}
	return conn, nil
}

// fingerprint names the source: a hash of its rows' count in each table
// and of its rooms' ids and positions, which a node writing to it would
// change. It also returns the rows to copy, all tables.
func fingerprint(ctx context.Context, db *sql.DB) (string, int64, error) {
	h := sha256.New()
	var total int64
	for _, t := range tables {
		var n int64
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM "+t.name).Scan(&n); err != nil {
			return "", 0, fmt.Errorf("port: source: count %s: %w", t.name, err)
		}
		fmt.Fprintf(h, "%s=%d;", t.name, n)
		total += n
	}
	var first, last sql.NullString
	var lastSeq, lastChange, created sql.NullInt64
	err := db.QueryRowContext(ctx, `SELECT min(id), max(id), sum(last_seq), sum(last_change), max(created_at) FROM rooms`).
		Scan(&first, &last, &lastSeq, &lastChange, &created)
	if err != nil {
		return "", 0, fmt.Errorf("port: source: rooms: %w", err)
	}
	fmt.Fprintf(h, "rooms %s %s %d %d %d;", first.String, last.String, lastSeq.Int64, lastChange.Int64, created.Int64)
	return hex.EncodeToString(h.Sum(nil)), total, nil
}

// state is what the target holds.
type state struct {
	port        bool   // a port's bookkeeping (parley_port)
	fingerprint string // its source's
	started     time.Time
	finished    bool
	finishedAt  time.Time
	data        string // what else it holds, "" when nothing
}

// targetState reads what the target holds, changing nothing.
func targetState(ctx context.Context, conn *pgx.Conn) (state, error) {
	var st state
	var migrations, port bool
	var others []string
	ours := append(TableNames(), "schema_migrations", "parley_port", "parley_port_progress")
	err := conn.QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL, to_regclass('parley_port') IS NOT NULL,
			coalesce(array_agg(tablename::text ORDER BY tablename) FILTER (WHERE tablename <> ALL ($1)), '{}')
		FROM pg_tables WHERE schemaname = current_schema()`, ours).Scan(&migrations, &port, &others)
	if err != nil {
		return st, fmt.Errorf("port: read the target: %w", err)
	}
	if port {
		var fin *time.Time
		err := conn.QueryRow(ctx, `SELECT fingerprint, started_at, finished_at FROM parley_port`).Scan(&st.fingerprint, &st.started, &fin)
		if err != nil {
			return st, fmt.Errorf("port: read the target's port: %w", err)
		}
		st.port = true
		if fin != nil {
			st.finished, st.finishedAt = true, *fin
		}
		return st, nil
	}
	if len(others) > 0 {
		st.data = "its schema holds tables that are not Parley's (" + strings.Join(others, ", ") + ")"
		return st, nil
	}
	if !migrations {
		return st, nil
	}
	for _, t := range tables {
		var any bool
		var exists bool
		if err := conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, t.name).Scan(&exists); err != nil {
			return st, fmt.Errorf("port: read the target: %w", err)
		}
		if !exists {
			continue
		}
		if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+t.name+`)`).Scan(&any); err != nil {
			return st, fmt.Errorf("port: read the target: %w", err)
		}
		if any {
			st.data = "it is a Parley database with " + t.name + " in it"
			return st, nil
		}
	}
	return st, nil
}

// beginPort creates the port's bookkeeping in the target, unless it is
// there already (a resumed port): parley_port, one row naming the
// source, and parley_port_progress, each table's cursor.
func beginPort(ctx context.Context, conn *pgx.Conn, fp string, total int64) error {
	_, err := conn.Exec(ctx, `
		CREATE TABLE IF NOT EXISTS parley_port (
			one         boolean PRIMARY KEY DEFAULT true CHECK (one),
			fingerprint text NOT NULL,
			total       bigint NOT NULL,
			started_at  timestamptz NOT NULL DEFAULT now(),
			finished_at timestamptz
		);
		CREATE TABLE IF NOT EXISTS parley_port_progress (
			tbl   text NOT NULL,
			part  integer NOT NULL,  -- the range of the table's keys
			after text[],            -- the key of the last row copied; NULL before the first
			until text[],            -- the key of the range's last row; NULL: the end of the table
			rows  bigint NOT NULL DEFAULT 0,
			done  boolean NOT NULL DEFAULT false,
			PRIMARY KEY (tbl, part)
		);`)
	if err != nil {
		return fmt.Errorf("port: create the port's tables: %w", err)
	}
	_, err = conn.Exec(ctx, `INSERT INTO parley_port (fingerprint, total) VALUES ($1, $2) ON CONFLICT DO NOTHING`, fp, total)
	if err != nil {
		return fmt.Errorf("port: record the port: %w", err)
	}
	return nil
}

func logf(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, "port: "+format+"\n", args...)
	}
}
