package sqlite

import (
	"cmp"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"parley"
)

// BenchmarkCeiling is the ceiling of durable writes on this machine: a bare
// loop, no store, no group commit, no concurrency, that inserts
// Parley-shaped rows (a 60-byte body, 100 rooms in turn, each room's seqs
// 1, 2, 3, ...) as multi-row INSERTs of a batch in one transaction, in key
// order (as the store does), in WAL mode with synchronous=FULL (an fsync
// per commit, in the commit). Run it
// in the same process run as BenchmarkSendParallel, alternating, to get
// the store's ratio to it (BENCHMARKS.md, "Store"):
//
//	go test -c -tags sqlite_fts5 -o /tmp/sq.test ./sqlite/ && cd sqlite
//	/tmp/sq.test -test.run '^$' -test.bench Ceiling -test.benchtime 100000x
//
// Each sub-benchmark is one schema of the messages table and a batch size
// (256, 512 and 1,024: a commit's cost goes with the rooms it touches, so
// the rate a message grows with the batch):
//
//   - pk: the primary key (room_id, seq) alone, WITHOUT ROWID;
//   - pk+idx: the secondary indexes of migrations 0001 to 0004 (id UNIQUE,
//     messages_client, messages_change);
//   - pk+fts: the primary key and the full-text index of migration 0003,
//     kept in the same transaction;
//   - v4: the table as migrations 0001 to 0004 left it: pk+idx and the
//     full-text index;
//   - v5: the table as it is now (migration 0005): no unique id, no
//     foreign keys, the ids derived from (num, seq), and the full-text index.
//
// -ceiling-keyed gives every row a client id (the idempotency key), as a
// client with receipts sends them; BenchmarkSendParallel's messages have
// none unless -keyed. -ceiling-fk turns foreign keys on (the store runs
// with them on). It reports msgs/s and the process's CPU per message.
func BenchmarkCeiling(b *testing.B) {
	for _, sc := range ceilingSchemas {
		if ceilingOnly != "" && !strings.Contains(","+ceilingOnly+",", ","+sc.name+",") {
			continue
		}
		for _, batch := range []int{256, 512, 1024} {
			b.Run(fmt.Sprintf("schema=%s/batch=%d", sc.name, batch), func(b *testing.B) {
				benchmarkCeiling(b, sc, batch)
			})
		}
	}
}

var (
	ceilingKeyed bool
	ceilingFK    bool
	ceilingOnly  string
	ceilingSync  = "FULL"
)

func init() {
	flag.BoolVar(&ceilingKeyed, "ceiling-keyed", false, "BenchmarkCeiling: give every row a client id")
	flag.BoolVar(&ceilingFK, "ceiling-fk", false, "BenchmarkCeiling: foreign keys on (rows reference rooms and users)")
	flag.StringVar(&ceilingSync, "ceiling-sync", ceilingSync, "BenchmarkCeiling: PRAGMA synchronous (FULL; OFF shows the CPU-bound loop)")
	flag.StringVar(&ceilingOnly, "ceiling-schemas", "", "BenchmarkCeiling: comma-separated schemas to run (default all)")
}

// ceilingSchema is one shape of the messages table.
type ceilingSchema struct {
	name string
	ddl  string // after the rooms and users tables
	fts  bool   // keep messages_fts in the same transaction
	// insert is the INSERT's head; values has its column count.
	insert string
	cols   int
	// derived: ids are messageID(num, seq) (0005); else as before 0005,
	// the writer's time and 64 random bits (oldMessageID).
	derived bool
}

// ceilingBase are the tables every schema's messages refer to.
const ceilingBase = `
CREATE TABLE users (id TEXT PRIMARY KEY, name TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE rooms (id TEXT PRIMARY KEY, num INTEGER NOT NULL UNIQUE) WITHOUT ROWID;
`

// The columns of migration 0003's messages, with what the table carries
// apart from the primary key in each schema.
const (
	ceilingV4Table = `CREATE TABLE messages (
	room_id     TEXT NOT NULL REFERENCES rooms (id),
	seq         INTEGER NOT NULL,
	id          TEXT NOT NULL %s,
	sender_id   TEXT NOT NULL REFERENCES users (id),
	sender_name TEXT NOT NULL,
	body        TEXT NOT NULL,
	client_id   TEXT NOT NULL DEFAULT '',
	sent_at     INTEGER NOT NULL,
	edited_at   INTEGER,
	deleted_at  INTEGER,
	change      INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (room_id, seq)
) WITHOUT ROWID;
`
	ceilingV4Indexes = `
CREATE UNIQUE INDEX messages_client ON messages (room_id, sender_id, client_id) WHERE client_id <> '';
CREATE INDEX messages_change ON messages (room_id, change) WHERE change > 0;
`
	ceilingFTS = `
CREATE VIEW messages_text AS
	SELECT (r.num << 36) | m.seq AS rid, m.body AS body
	FROM messages m JOIN rooms r ON r.id = m.room_id WHERE m.deleted_at IS NULL;
CREATE VIRTUAL TABLE messages_fts USING fts5 (body, content = 'messages_text', content_rowid = 'rid',
	tokenize = 'unicode61 remove_diacritics 0', detail = none, columnsize = 0);
`
	// Migration 0005's table: no unique id, no foreign keys.
	ceilingV5Table = `CREATE TABLE messages (
	room_id     TEXT NOT NULL,
	seq         INTEGER NOT NULL,
	id          TEXT NOT NULL,
	sender_id   TEXT NOT NULL,
	sender_name TEXT NOT NULL,
	body        TEXT NOT NULL,
	client_id   TEXT NOT NULL DEFAULT '',
	sent_at     INTEGER NOT NULL,
	edited_at   INTEGER,
	deleted_at  INTEGER,
	change      INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (room_id, seq)
) WITHOUT ROWID;
`
	ceilingV4Insert = `INSERT INTO messages (id, room_id, seq, sender_id, sender_name, body, client_id, sent_at) VALUES `
)

var ceilingSchemas = []ceilingSchema{
	{name: "pk", ddl: fmt.Sprintf(ceilingV4Table, ""), insert: ceilingV4Insert, cols: 8},
	{name: "pk+idx", ddl: fmt.Sprintf(ceilingV4Table, "UNIQUE") + ceilingV4Indexes, insert: ceilingV4Insert, cols: 8},
	{name: "pk+fts", ddl: fmt.Sprintf(ceilingV4Table, "") + ceilingFTS, fts: true, insert: ceilingV4Insert, cols: 8},
	{name: "v4", ddl: fmt.Sprintf(ceilingV4Table, "UNIQUE") + ceilingV4Indexes + ceilingFTS, fts: true, insert: ceilingV4Insert, cols: 8},
	{name: "v5", ddl: ceilingV5Table + ceilingV4Indexes + ceilingFTS, fts: true, insert: ceilingV4Insert, cols: 8, derived: true},
}

func benchmarkCeiling(b *testing.B, sc ceilingSchema, batch int) {
	const nRooms = 100
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "ceiling.db")
	fk := "OFF"
	if ceilingFK {
		fk = "ON"
	}
	pragmas := []string{"PRAGMA journal_mode = WAL", "PRAGMA synchronous = " + ceilingSync, "PRAGMA foreign_keys = " + fk,
		"PRAGMA cache_size = -16384", "PRAGMA temp_store = MEMORY"}
	db := sql.OpenDB(&connector{drv: newDriver(), dsn: path + "?" + dsnParams, pragmas: pragmas})
	db.SetMaxOpenConns(1)
	defer db.Close()
	if _, err := db.ExecContext(ctx, ceilingBase+sc.ddl); err != nil {
		b.Fatalf("schema %s: %v", sc.name, err)
	}
	rooms, users, nums := make([]string, nRooms), make([]string, nRooms), make([]int64, nRooms)
	for i := range rooms {
		rooms[i], users[i], nums[i] = parley.NewID(), parley.NewID(), int64(i+1)
		if _, err := db.ExecContext(ctx, `INSERT INTO users VALUES (?, ?)`, users[i], fmt.Sprint("sender", i)); err != nil {
			b.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO rooms VALUES (?, ?)`, rooms[i], nums[i]); err != nil {
			b.Fatal(err)
		}
	}
	ins, err := db.PrepareContext(ctx, sc.insert+values(batch, sc.cols))
	if err != nil {
		b.Fatal(err)
	}
	defer ins.Close()
	var fts *sql.Stmt
	if sc.fts {
		if fts, err = db.PrepareContext(ctx, `INSERT INTO messages_fts (rowid, body) VALUES `+values(batch, 2)); err != nil {
			b.Fatal(err)
		}
		defer fts.Close()
	}
	body := "a chat message of a typical length, about sixty bytes long."
	seqs := make([]int64, nRooms)
	args := make([]any, 0, batch*sc.cols)
	ftsArgs := make([]any, 0, batch*2)
	type ceilingRow struct {
		room     int
		seq, now int64
	}
	rows := make([]ceilingRow, 0, batch)
	var lastNow int64
	k := 0 // the next message's room, in turn
	commits := 0
	cpu0 := ceilingCPU()
	b.ResetTimer()
	for n := 0; n < b.N; n += batch {
		args, ftsArgs, rows = args[:0], ftsArgs[:0], rows[:0]
		for range batch {
			r := k % nRooms
			k++
			seqs[r]++
			now := max(parley.Now().UnixMicro(), lastNow+1)
			lastNow = now
			rows = append(rows, ceilingRow{r, seqs[r], now})
		}
		// In key order, as the store inserts them: a room's rows in a
		// run, and rising full-text rowids (FTS5 writes out a segment at
		// every rowid lower than the one before).
		slices.SortFunc(rows, func(a, b ceilingRow) int { return cmp.Or(cmp.Compare(a.room, b.room), cmp.Compare(a.seq, b.seq)) })
		for _, row := range rows {
			r := row.room
			client := ""
			if ceilingKeyed {
				client = fmt.Sprintf("c-%d-%d", r, row.seq)
			}
			id := oldMessageID(row.now)
			if sc.derived {
				id = messageID(nums[r], row.seq)
			}
			args = append(args, id, rooms[r], row.seq, users[r], "sender", body, client, row.now)
			if sc.fts {
				ftsArgs = append(ftsArgs, nums[r]<<36|row.seq, body)
			}
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.Stmt(ins).Exec(args...); err != nil {
			b.Fatal(err)
		}
		if fts != nil {
			if _, err := tx.Stmt(fts).Exec(ftsArgs...); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		commits++
	}
	b.StopTimer()
	msgs := float64(commits * batch) // b.N rounded up to whole batches
	secs := b.Elapsed().Seconds()
	b.ReportMetric(msgs/secs, "msgs/s")
	b.ReportMetric(float64(commits)/secs, "commits/s")
	b.ReportMetric((ceilingCPU()-cpu0).Seconds()*1e6/msgs, "cpu-µs/op")
}

// oldMessageID is a message id as the store made them before migration
// 0005: the writer's time (growing) and 64 random bits.
func oldMessageID(now int64) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(now))
	rand.Read(b[8:])
	return idEncoding.EncodeToString(b[:])
}

// ceilingCPU is the process's CPU time, user and system.
func ceilingCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
