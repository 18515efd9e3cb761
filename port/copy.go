package port

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// stageMessages is the session's staging table of messages: a batch is
// copied into it with COPY, then inserted into messages with its search
// vector, which only PostgreSQL computes (to_tsvector, as a send does).
// A temporary table writes no WAL, and each commit empties it.
const stageMessages = `CREATE TEMP TABLE IF NOT EXISTS port_messages (
	room_id text, seq bigint, id text, sender_id text, sender_name text, body text, client_id text,
	sent_at timestamptz, edited_at timestamptz, deleted_at timestamptz, change bigint
) ON COMMIT DELETE ROWS`

// insertMessages moves the staged batch into messages: a live message gets
// the search vector a send gives it, a tombstone none (as a deletion
// leaves it).
const insertMessages = `INSERT INTO messages (room_id, seq, id, sender_id, sender_name, body, client_id,
		sent_at, edited_at, deleted_at, change, tsv)
	SELECT room_id, seq, id, sender_id, sender_name, body, client_id, sent_at, edited_at, deleted_at, change,
		CASE WHEN deleted_at IS NULL THEN to_tsvector('simple', body) END
	FROM port_messages`

// progressRow is a table's row of parley_port_progress.
type progressRow struct {
	after []string // the cursor, nil before the first batch
	rows  int64
	done  bool
}

// batch is one transaction's rows, read from the source and converted,
// and the key of its last row.
type batch struct {
	rows [][]any
	last []any
}

// copyAll copies every table not done yet, each from its cursor.
func copyAll(ctx context.Context, conn *pgx.Conn, cfg Config, res *Result, start time.Time) error {
	// A batch commits its rows and its cursor together, so an
	// asynchronous commit lost in a crash of PostgreSQL loses both: the
	// next run copies that batch again. The last step commits
	// synchronously.
	if _, err := conn.Exec(ctx, `SET synchronous_commit = off`); err != nil {
		return fmt.Errorf("port: %w", err)
	}
	if _, err := conn.Exec(ctx, stageMessages); err != nil {
		return fmt.Errorf("port: staging table: %w", err)
	}
	for _, t := range tables {
		if _, err := conn.Exec(ctx, `INSERT INTO parley_port_progress (tbl) VALUES ($1) ON CONFLICT DO NOTHING`, t.name); err != nil {
			return fmt.Errorf("port: progress: %w", err)
		}
	}
	progress := map[string]progressRow{}
	var done, total int64
	if err := conn.QueryRow(ctx, `SELECT total FROM parley_port`).Scan(&total); err != nil {
		return fmt.Errorf("port: progress: %w", err)
	}
	rows, err := conn.Query(ctx, `SELECT tbl, after, rows, done FROM parley_port_progress`)
	if err != nil {
		return fmt.Errorf("port: progress: %w", err)
	}
	for rows.Next() {
		var name string
		var p progressRow
		if err := rows.Scan(&name, &p.after, &p.rows, &p.done); err != nil {
			return fmt.Errorf("port: progress: %w", err)
		}
		progress[name] = p
		done += p.rows
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("port: progress: %w", err)
	}
	c := copier{conn: conn, cfg: cfg, res: res, start: start, done: done, total: total}
	for _, t := range tables {
		p := progress[t.name]
		if p.done {
			continue
		}
		after, err := decodeKey(t, p.after)
		if err != nil {
			return err
		}
		if p.after != nil {
			logf(cfg.Log, "%s: resuming after %d rows", t.name, p.rows)
		}
		if err := c.table(ctx, t, after); err != nil {
			return err
		}
	}
	c.report("", true)
	return nil
}

// copier copies the tables of one run.
type copier struct {
	conn        *pgx.Conn
	cfg         Config
	res         *Result
	start       time.Time
	done, total int64 // rows, this run's and earlier ones'
	batches     int   // committed by this run
}

// table copies t's rows after the key after (nil: all of them), one
// transaction a batch, each with the cursor of its last row. A goroutine
// reads the next batch from the source while this one is written.
func (c *copier) table(ctx context.Context, t table, after []any) error {
	rctx, cancel := context.WithCancel(ctx)
	ch := make(chan batch, 1)
	var rerr error
	go func() {
		defer close(ch)
		rerr = readBatches(rctx, c.cfg.Source, t, after, c.cfg.Batch, ch)
	}()
	defer func() {
		cancel()
		for range ch { // the reader ends once it sees the cancel
		}
	}()
	for b := range ch {
		last := len(b.rows) < c.cfg.Batch
		if err := c.commit(ctx, t, b, last); err != nil {
			return err
		}
		c.batches++
		c.report(t.name, false)
		if c.cfg.StopAfter > 0 && c.batches >= c.cfg.StopAfter {
			return ErrStopped
		}
	}
	if rerr != nil {
		return rerr
	}
	// When the source ended on a full batch (or had nothing), no batch
	// said it was the last.
	if _, err := c.conn.Exec(ctx, `UPDATE parley_port_progress SET done = true WHERE tbl = $1`, t.name); err != nil {
		return fmt.Errorf("port: %s: %w", t.name, err)
	}
	return nil
}

// commit writes one batch and its cursor in one transaction.
func (c *copier) commit(ctx context.Context, t table, b batch, last bool) error {
	tx, err := c.conn.Begin(ctx)
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
	_, err = tx.Exec(ctx, `UPDATE parley_port_progress SET after = $2, rows = rows + $3, done = $4 WHERE tbl = $1`,
		t.name, encodeKey(t, b.last), len(b.rows), last)
	if err != nil {
		return fmt.Errorf("port: %s: progress: %w", t.name, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("port: %s: commit: %w", t.name, err)
	}
	n := int64(len(b.rows))
	c.res.Copied[t.name] += n
	c.done += n
	if t.name == "messages" {
		c.res.Messages += n
	}
	return nil
}

func (c *copier) report(table string, final bool) {
	if c.cfg.Progress != nil {
		c.cfg.Progress(Progress{Table: table, Done: c.done, Total: c.total, Messages: c.res.Messages,
			Elapsed: time.Since(c.start), Final: final})
	}
}

// readBatches reads t's rows after the key after, in key order, and sends
// them to ch in batches of n converted rows, until the table ends or ctx
// is done.
func readBatches(ctx context.Context, db *sql.DB, t table, after []any, n int, ch chan<- batch) error {
	for {
		var args []any
		args = append(args, after...)
		args = append(args, n)
		rows, err := db.QueryContext(ctx, t.selectSource(after != nil), args...)
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
// as it is, integers in decimal, blobs in hex.
func encodeKey(t table, key []any) []string {
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
