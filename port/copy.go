package port

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// stageMessages is a session's staging table of messages: a batch is
// copied into it with COPY, then inserted into messages with its search
// vector, which only PostgreSQL computes (to_tsvector, as a send does).
// A temporary table writes no WAL, and each commit empties it.
const stageMessages = `CREATE TEMP TABLE IF NOT EXISTS port_messages (
	room_id text, seq bigint, id text, sender_id text, sender_name text, body text, client_id text,
	sent_at timestamptz, edited_at timestamptz, deleted_at timestamptz, change bigint, reactions text,
	reply_seq bigint, reply_sender text, reply_excerpt text, thread text,
	pinned_by text, pinned_at timestamptz, pin_change bigint, files text, mentions text, change_seq bigint
) ON COMMIT DELETE ROWS`

// insertMessages moves the staged batch into messages: a live message gets
// the search vector a send gives it, a tombstone none (as a deletion
// leaves it).
const insertMessages = `INSERT INTO messages (room_id, seq, id, sender_id, sender_name, body, client_id,
		sent_at, edited_at, deleted_at, change, reactions, reply_seq, reply_sender, reply_excerpt, thread,
		pinned_by, pinned_at, pin_change, files, mentions, change_seq, tsv)
	SELECT room_id, seq, id, sender_id, sender_name, body, client_id, sent_at, edited_at, deleted_at, change, reactions,
		reply_seq, reply_sender, reply_excerpt, thread, pinned_by, pinned_at, pin_change, files, mentions, change_seq,
		CASE WHEN deleted_at IS NULL THEN to_tsvector('simple', body) END
	FROM port_messages`

// part is a range of a table's keys and how far its copy is: a row of
// parley_port_progress.
type part struct {
	table        table
	n            int   // its number
	after, until []any // the last key copied (nil: none yet) and the range's last key (nil: the end)
	rows         int64 // copied, by every run
	done         bool
}

// batch is one transaction's rows, read from the source and converted,
// and the key of its last row.
type batch struct {
	rows [][]any
	last []any
}

// copier copies the tables of one run.
type copier struct {
	cfg     Config
	start   time.Time
	total   int64        // rows to copy, all tables
	done    atomic.Int64 // rows copied, this run's and earlier ones'
	msgs    atomic.Int64 // messages copied by this run
	batches atomic.Int64 // committed by this run
	table   atomic.Value // the name of the table being copied
	tick    chan struct{}
}

// copyAll copies every part not done yet, each from its cursor: the small
// tables one after the other on conn, then the messages' parts at once,
// each on a connection of its own.
func copyAll(ctx context.Context, conn *pgx.Conn, cfg Config, res *Result, start time.Time) error {
	if err := planParts(ctx, conn, cfg); err != nil {
		return err
	}
	parts, err := loadParts(ctx, conn)
	if err != nil {
		return err
	}
	c := &copier{cfg: cfg, start: start, tick: make(chan struct{}, 1)}
	if err := conn.QueryRow(ctx, `SELECT total FROM parley_port`).Scan(&c.total); err != nil {
		return fmt.Errorf("port: progress: %w", err)
	}
	c.table.Store("")
	for _, p := range parts {
		c.done.Add(p.rows)
	}
	if err := session(ctx, conn); err != nil {
		return err
	}
	var messages []part
	for _, p := range parts {
		if p.done {
			continue
		}
		if p.after != nil {
			logf(cfg.Log, "%s: resuming after %d rows", p.table.name, p.rows)
		}
		if p.table.name == "messages" {
			messages = append(messages, p)
			continue
		}
		n, err := c.copyPart(ctx, conn, p)
		res.Copied[p.table.name] += n
		if err != nil {
			return err
		}
	}
	errc := make(chan error, len(messages))
	counts := make(chan int64, len(messages))
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, p := range messages {
		go func() {
			n, err := c.copyPartOwn(rctx, p)
			counts <- n
			errc <- err
		}()
	}
	var first error
	for range messages {
		err := c.wait(errc)
		if err != nil && first == nil {
			first = err
			cancel() // the other parts stop after their batch
		}
		n := <-counts
		res.Copied["messages"] += n
		res.Messages += n
	}
	c.report(true)
	return first
}

// wait reports progress until one of the parts ends, and returns its
// outcome.
func (c *copier) wait(errc <-chan error) error {
	for {
		select {
		case err := <-errc:
			return err
		case <-c.tick:
			c.report(false)
		}
	}
}

// session sets up a connection for copying: asynchronous commits (a
// batch commits its rows and its cursor together, so a commit lost in a
// crash of PostgreSQL loses both, and the next run copies that batch
// again) and the staging table.
func session(ctx context.Context, conn *pgx.Conn) error {
	if _, err := conn.Exec(ctx, `SET synchronous_commit = off`); err != nil {
		return fmt.Errorf("port: %w", err)
	}
	if _, err := conn.Exec(ctx, stageMessages); err != nil {
		return fmt.Errorf("port: staging table: %w", err)
	}
	return nil
}

// copyPartOwn copies p on a connection of its own.
func (c *copier) copyPartOwn(ctx context.Context, p part) (int64, error) {
	conn, err := connect(ctx, c.cfg.Target)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := session(ctx, conn); err != nil {
		return 0, err
	}
	return c.copyPart(ctx, conn, p)
}

// planParts records the parts of every table, unless a run before did:
// one for each small table, Config.Writers for the messages, split where
// the messages' keys split them into ranges of about as many rows.
func planParts(ctx context.Context, conn *pgx.Conn, cfg Config) error {
	var planned bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM parley_port_progress)`).Scan(&planned); err != nil {
		return fmt.Errorf("port: progress: %w", err)
	}
	if planned {
		return nil
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("port: progress: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	for _, t := range tables {
		bounds := [][]any{nil}
		if t.name == "messages" {
			if bounds, err = splitKeys(ctx, cfg.Source, t, cfg.Writers); err != nil {
				return err
			}
		}
		for i := range bounds {
			var after, until []string
			if i > 0 {
				after = encodeKey(t, bounds[i])
			}
			if i+1 < len(bounds) {
				until = encodeKey(t, bounds[i+1])
			}
			if _, err := tx.Exec(ctx, `INSERT INTO parley_port_progress (tbl, part, after, until) VALUES ($1, $2, $3, $4)`,
				t.name, i, after, until); err != nil {
				return fmt.Errorf("port: progress: %w", err)
			}
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("port: progress: %w", err)
	}
	return nil
}

// splitKeys returns the bounds of n ranges of t's rows of about as many
// rows each: nil, then the key of the last row of each range but the
// last. A table of fewer rows than n has fewer ranges.
func splitKeys(ctx context.Context, db *sql.DB, t table, n int) ([][]any, error) {
	bounds := [][]any{nil}
	var rows int64
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM "+t.name).Scan(&rows); err != nil {
		return nil, fmt.Errorf("port: source: count %s: %w", t.name, err)
	}
	for i := 1; i < n && rows >= int64(n); i++ {
		q := "SELECT " + joinCols(t.colNames()[:t.nkey]) + " FROM " + t.name +
			" ORDER BY " + joinCols(t.colNames()[:t.nkey]) + " LIMIT 1 OFFSET ?"
		key := make([]any, t.nkey)
		ptrs := make([]any, t.nkey)
		for j := range key {
			ptrs[j] = &key[j]
		}
		if err := db.QueryRowContext(ctx, q, rows*int64(i)/int64(n)-1).Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("port: source: split %s: %w", t.name, err)
		}
		bounds = append(bounds, key)
	}
	return bounds, nil
}

// loadParts reads every part's progress, in the order of tables.
func loadParts(ctx context.Context, conn *pgx.Conn) ([]part, error) {
	var parts []part
	for _, t := range tables {
		rows, err := conn.Query(ctx, `SELECT part, after, until, rows, done FROM parley_port_progress WHERE tbl = $1 ORDER BY part`, t.name)
		if err != nil {
			return nil, fmt.Errorf("port: progress: %w", err)
		}
		for rows.Next() {
			p := part{table: t}
			var after, until []string
			if err := rows.Scan(&p.n, &after, &until, &p.rows, &p.done); err != nil {
				rows.Close()
				return nil, fmt.Errorf("port: progress: %w", err)
			}
			if p.after, err = decodeKey(t, after); err == nil {
				p.until, err = decodeKey(t, until)
			}
			if err != nil {
				rows.Close()
				return nil, err
			}
			parts = append(parts, p)
		}
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("port: progress: %w", err)
		}
	}
	return parts, nil
}

// copyPart copies p's rows after its cursor, one transaction a batch,
// each with the cursor of its last row, and returns how many it copied.
// A goroutine reads the next batch from the source while this one is
// written.
func (c *copier) copyPart(ctx context.Context, conn *pgx.Conn, p part) (int64, error) {
	c.table.Store(p.table.name)
	rctx, cancel := context.WithCancel(ctx)
	ch := make(chan batch, 1)
	var rerr error
	go func() {
		defer close(ch)
		rerr = readBatches(rctx, c.cfg.Source, p, c.cfg.Batch, ch)
	}()
	defer func() {
		cancel()
		for range ch { // the reader ends once it sees the cancel
		}
	}()
	var copied int64
	for b := range ch {
		last := len(b.rows) < c.cfg.Batch
		if err := commit(ctx, conn, p, b, last); err != nil {
			return copied, err
		}
		copied += int64(len(b.rows))
		c.done.Add(int64(len(b.rows)))
		if p.table.name == "messages" {
			c.msgs.Add(int64(len(b.rows)))
		}
		select {
		case c.tick <- struct{}{}:
		default:
		}
		if n := c.batches.Add(1); c.cfg.StopAfter > 0 && n >= int64(c.cfg.StopAfter) {
			return copied, ErrStopped
		}
		if ctx.Err() != nil {
			return copied, ctx.Err()
		}
	}
	if rerr != nil {
		return copied, rerr
	}
	// When the range ended on a full batch (or had nothing), no batch
	// said it was the last.
	if _, err := conn.Exec(ctx, `UPDATE parley_port_progress SET done = true WHERE tbl = $1 AND part = $2`, p.table.name, p.n); err != nil {
		return copied, fmt.Errorf("port: %s: %w", p.table.name, err)
	}
	if p.table.name != "messages" {
		c.report(false)
	}
	return copied, nil
}

// commit writes one batch and its part's cursor in one transaction.
func commit(ctx context.Context, conn *pgx.Conn, p part, b batch, last bool) error {
	t := p.table
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("port: %s: %w", t.name, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	names := make([]string, len(t.cols))
	for i, col := range t.cols {
		names[i] = col.name
	}
	into := t.name
	if t.name == "messages" {
		into = "port_messages"
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{into}, names, pgx.CopyFromRows(b.rows)); err != nil {
		return fmt.Errorf("port: copy %s: %w", t.name, err)
	}
	if t.name == "messages" {
		if _, err := tx.Exec(ctx, insertMessages); err != nil {
			return fmt.Errorf("port: insert messages: %w", err)
		}
	}
	_, err = tx.Exec(ctx, `UPDATE parley_port_progress SET after = $3, rows = rows + $4, done = $5 WHERE tbl = $1 AND part = $2`,
		t.name, p.n, encodeKey(t, b.last), len(b.rows), last)
	if err != nil {
		return fmt.Errorf("port: %s: progress: %w", t.name, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("port: %s: commit: %w", t.name, err)
	}
	return nil
}

// report calls Config.Progress, from the goroutine of Run only.
func (c *copier) report(final bool) {
	if c.cfg.Progress != nil {
		c.cfg.Progress(Progress{Table: c.table.Load().(string), Done: c.done.Load(), Total: c.total,
			Messages: c.msgs.Load(), Elapsed: time.Since(c.start), Final: final})
	}
}

// readBatches reads p's rows after its cursor, in key order, and sends
// them to ch in batches of n converted rows, until the range ends or ctx
// is done.
func readBatches(ctx context.Context, db *sql.DB, p part, n int, ch chan<- batch) error {
	t, after := p.table, p.after
	for {
		var args []any
		args = append(args, after...)
		args = append(args, p.until...)
		args = append(args, n)
		rows, err := db.QueryContext(ctx, t.selectSource(after != nil, p.until != nil), args...)
		if err != nil {
			return fmt.Errorf("port: read %s: %w", t.name, err)
		}
		b, err := scanBatch(rows, t, n)
		if err != nil {
			return fmt.Errorf("port: read %s: %w", t.name, err)
		}
		if len(b.rows) == 0 {
			return nil
		}
		select {
		case ch <- b:
		case <-ctx.Done():
			return ctx.Err()
		}
		if len(b.rows) < n {
			return nil
		}
		after = b.last
	}
}

// scanBatch reads rows into a batch: each row converted for PostgreSQL,
// and the source's key of the last one.
func scanBatch(rows *sql.Rows, t table, n int) (batch, error) {
	defer rows.Close()
	b := batch{rows: make([][]any, 0, n)}
	src := make([]any, len(t.cols))
	ptrs := make([]any, len(t.cols))
	for i := range src {
		ptrs[i] = &src[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return b, err
		}
		row := make([]any, len(t.cols))
		for i, col := range t.cols {
			v, err := toTarget(col, src[i])
			if err != nil {
				return b, err
			}
			row[i] = v
		}
		b.rows = append(b.rows, row)
	}
	if len(b.rows) > 0 {
		b.last = append([]any(nil), src[:t.nkey]...)
	}
	return b, rows.Err()
}

// encodeKey writes a source key as parley_port_progress keeps it: text
// as it is, integers in decimal, blobs in hex; nil for no key.
func encodeKey(t table, key []any) []string {
	if key == nil {
		return nil
	}
	out := make([]string, len(key))
	for i, v := range key {
		switch x := v.(type) {
		case string:
			out[i] = x
		case []byte:
			if t.cols[i].kind == kBlob {
				out[i] = hex.EncodeToString(x)
			} else {
				out[i] = string(x)
			}
		case int64:
			out[i] = strconv.FormatInt(x, 10)
		default:
			out[i] = fmt.Sprint(x)
		}
	}
	return out
}

// decodeKey reads a key encodeKey wrote, as the source's values.
func decodeKey(t table, s []string) ([]any, error) {
	if s == nil {
		return nil, nil
	}
	if len(s) != t.nkey {
		return nil, fmt.Errorf("port: %s: the cursor %q is not a key of %d columns", t.name, s, t.nkey)
	}
	key := make([]any, len(s))
	for i, v := range s {
		switch t.cols[i].kind {
		case kBlob:
			b, err := hex.DecodeString(v)
			if err != nil {
				return nil, fmt.Errorf("port: %s: cursor: %w", t.name, err)
			}
			key[i] = b
		case kInt:
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("port: %s: cursor: %w", t.name, err)
			}
			key[i] = n
		default:
			key[i] = v
		}
	}
	return key, nil
}
