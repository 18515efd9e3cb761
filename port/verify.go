package port

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"fmt"
	"hash"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// TableReport is one table's side of a verification.
type TableReport struct {
	Name           string
	Source, Target int64 // rows in each store
	Same           bool  // the same rows (the checksums agree)
	Room           bool  // compared room by room (Report.Differ)
}

// Report is what Verify found.
type Report struct {
	Tables []TableReport
	// Rooms is how many rooms' messages were compared; Differ lists
	// those whose messages differ (at most maxListed), DifferN counts
	// them all.
	Rooms   int
	Differ  []string
	DifferN int
	// Unindexed counts the messages whose search vector is wrong: a live
	// one without, a tombstone with one.
	Unindexed int64
	Took      time.Duration
}

// maxListed bounds the rooms a report names.
const maxListed = 10

// OK reports whether the two stores hold the same data.
func (r Report) OK() bool {
	for _, t := range r.Tables {
		if !t.Same {
			return false
		}
	}
	return r.DifferN == 0 && r.Unindexed == 0
}

// String is the report as parley port prints it: a line a table, then
// the rooms.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-12s %12s %12s  %s\n", "table", "sqlite", "postgres", "checksum")
	for _, t := range r.Tables {
		same := "same"
		if !t.Same {
			same = "DIFFERENT"
		}
		fmt.Fprintf(&b, "%-12s %12d %12d  %s\n", t.Name, t.Source, t.Target, same)
	}
	fmt.Fprintf(&b, "messages of %d rooms compared room by room (seq order): ", r.Rooms)
	if r.DifferN == 0 {
		b.WriteString("all the same\n")
	} else {
		fmt.Fprintf(&b, "%d DIFFER: %s\n", r.DifferN, strings.Join(r.Differ, ", "))
	}
	if r.Unindexed > 0 {
		fmt.Fprintf(&b, "%d messages have a wrong search vector\n", r.Unindexed)
	}
	return b.String()
}

// differences says in one line what differs.
func (r Report) differences() string {
	var parts []string
	for _, t := range r.Tables {
		if !t.Same && !t.Room {
			parts = append(parts, fmt.Sprintf("table %s (%d rows in SQLite, %d in PostgreSQL)", t.Name, t.Source, t.Target))
		}
	}
	if r.DifferN > 0 {
		parts = append(parts, fmt.Sprintf("the messages of %d rooms (%s)", r.DifferN, strings.Join(r.Differ, ", ")))
	}
	if r.Unindexed > 0 {
		parts = append(parts, fmt.Sprintf("%d search vectors", r.Unindexed))
	}
	return strings.Join(parts, "; ")
}

// Verify compares the source and the target, changing nothing: each
// table's rows (counts, and a SHA-256 over every column of every row in
// key order, computed alike from both stores), each room's messages (a
// SHA-256 over each message's columns in seq order), and the target's
// search vectors. It fails with ErrMismatch when they differ; the Report
// says where.
func Verify(ctx context.Context, cfg Config) (Report, error) {
	conn, err := connect(ctx, cfg.Target)
	if err != nil {
		return Report{}, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return verify(ctx, conn, cfg)
}

func verify(ctx context.Context, conn *pgx.Conn, cfg Config) (Report, error) {
	start := time.Now()
	var r Report
	logf(cfg.Log, "verifying: every table of both stores, and each room's messages")
	for _, t := range tables {
		var src, dst digest
		errc := make(chan error, 1)
		go func() { errc <- readSource(ctx, cfg.Source, t, &src) }()
		derr := readTarget(ctx, conn, t, &dst)
		if err := <-errc; err != nil {
			return r, err
		}
		if derr != nil {
			return r, derr
		}
		tr := TableReport{Name: t.name, Source: src.rows, Target: dst.rows, Same: src.sum() == dst.sum() && src.rows == dst.rows}
		if t.room { // summed room by room only
			tr.Room = true
			r.Rooms = max(len(src.rooms), len(dst.rooms))
			r.Differ, r.DifferN = differ(src.rooms, dst.rooms)
			tr.Same = tr.Same && r.DifferN == 0
		}
		r.Tables = append(r.Tables, tr)
	}
	err := conn.QueryRow(ctx, `SELECT count(*) FROM messages
		WHERE (deleted_at IS NULL) <> (tsv IS NOT NULL)`).Scan(&r.Unindexed)
	if err != nil {
		return r, fmt.Errorf("port: verify search vectors: %w", err)
	}
	r.Took = time.Since(start)
	if !r.OK() {
		return r, fmt.Errorf("port: %w: %s", ErrMismatch, r.differences())
	}
	return r, nil
}

// differ lists the rooms whose digests differ, or that one side lacks.
func differ(a, b map[string][32]byte) ([]string, int) {
	var out []string
	for room, d := range a {
		if e, ok := b[room]; !ok || e != d {
			out = append(out, room)
		}
	}
	for room := range b {
		if _, ok := a[room]; !ok {
			out = append(out, room)
		}
	}
	slices.Sort(out)
	n := len(out)
	if n > maxListed {
		out = out[:maxListed]
	}
	return out, n
}

// digest is a table's checksum, or each room's for a table of rooms.
type digest struct {
	rows  int64
	all   hash.Hash
	rooms map[string][32]byte
	room  string    // the room being summed
	rh    hash.Hash // its sum
	buf   []byte
}

// add sums one row, its values in canonical form (canon).
func (d *digest) add(t table, vals []any) {
	if d.all == nil {
		d.all = sha256.New()
	}
	d.rows++
	d.buf = d.buf[:0]
	for _, v := range vals {
		d.buf = appendValue(d.buf, v)
	}
	if !t.room {
		d.all.Write(d.buf)
		return
	}
	room := vals[0].(string)
	if d.rh == nil || room != d.room {
		d.flush()
		d.room, d.rh = room, sha256.New()
	}
	d.rh.Write(d.buf)
}

// flush ends the room being summed.
func (d *digest) flush() {
	if d.rh == nil {
		return
	}
	if d.rooms == nil {
		d.rooms = map[string][32]byte{}
	}
	var s [32]byte
	d.rh.Sum(s[:0])
	d.rooms[d.room] = s
	d.rh = nil
}

func (d *digest) sum() [32]byte {
	d.flush()
	var s [32]byte
	if d.all != nil {
		d.all.Sum(s[:0])
	}
	return s
}

// appendValue appends v (nil, int64, string or []byte) tagged with its
// type and its length, so that no two rows sum alike by their values
// running into each other.
func appendValue(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, 0)
	case int64:
		b = append(b, 1)
		return binary.BigEndian.AppendUint64(b, uint64(x))
	case string:
		b = append(b, 2)
		b = binary.BigEndian.AppendUint64(b, uint64(len(x)))
		return append(b, x...)
	case []byte:
		b = append(b, 3)
		b = binary.BigEndian.AppendUint64(b, uint64(len(x)))
		return append(b, x...)
	}
	panic(fmt.Sprintf("port: no canonical form for %T", v))
}

// canon is a value of column c, as either store's driver returns it, in
// the form both sum alike: times as unix microseconds, booleans as 0 or
// 1, text as a string, integers as int64.
func canon(c column, v any) (any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case time.Time:
		return x.UnixMicro(), nil
	case bool:
		if x {
			return int64(1), nil
		}
		return int64(0), nil
	case int32:
		return int64(x), nil
	case int16:
		return int64(x), nil
	case int64:
		return x, nil
	case string:
		if c.kind == kBlob {
			return []byte(x), nil
		}
		return x, nil
	case []byte:
		if c.kind == kBlob {
			return x, nil
		}
		return string(x), nil
	}
	return nil, fmt.Errorf("column %s: unexpected %T", c.name, v)
}

// readSource sums every row of t in the source.
func readSource(ctx context.Context, db *sql.DB, t table, d *digest) error {
	rows, err := db.QueryContext(ctx, t.selectAll(false))
	if err != nil {
		return fmt.Errorf("port: verify: source %s: %w", t.name, err)
	}
	defer rows.Close()
	vals := make([]any, len(t.cols))
	ptrs := make([]any, len(t.cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return fmt.Errorf("port: verify: source %s: %w", t.name, err)
		}
		for i, c := range t.cols {
			if vals[i], err = canon(c, vals[i]); err != nil {
				return fmt.Errorf("port: verify: source %s: %w", t.name, err)
			}
		}
		d.add(t, vals)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("port: verify: source %s: %w", t.name, err)
	}
	return nil
}

// readTarget sums every row of t in the target.
func readTarget(ctx context.Context, conn *pgx.Conn, t table, d *digest) error {
	rows, err := conn.Query(ctx, t.selectAll(true))
	if err != nil {
		return fmt.Errorf("port: verify: target %s: %w", t.name, err)
	}
	defer rows.Close()
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return fmt.Errorf("port: verify: target %s: %w", t.name, err)
		}
		for i, c := range t.cols {
			if vals[i], err = canon(c, vals[i]); err != nil {
				return fmt.Errorf("port: verify: target %s: %w", t.name, err)
			}
		}
		d.add(t, vals)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("port: verify: target %s: %w", t.name, err)
	}
	return nil
}
