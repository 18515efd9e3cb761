package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"parley"
	"parley/groupcommit"
	"parley/parleytest"
)

// TestCommitMixedBatch runs one hand-made batch through the writer's commit
// function: Sends grouped around other writes, a repeat inside the batch, a
// Send to an unknown room, one from an unknown sender, and one that breaks a
// constraint (a trigger of the test's), which must fail alone: the batch
// runs again in groups of one.
func TestCommitMixedBatch(t *testing.T) {
	rec := &parleytest.Recorder{}
	s, err := Open(context.Background(), Config{Path: filepath.Join(t.TempDir(), "p.db"), OnCommit: rec.Sink})
	if err != nil {
		t.Fatalf("Open() error = %v", err)
	}
	defer s.Close()
	u, v := parleytest.MustCreateUser(t, s, "u"), parleytest.MustCreateUser(t, s, "v")
	r1 := parleytest.MustCreateRoom(t, s, u, "r1", 0)
	r2 := parleytest.MustCreateRoom(t, s, u, "r2", 0)
	if _, err := s.wdb.Exec(`CREATE TEMP TRIGGER poison BEFORE INSERT ON messages WHEN NEW.body = 'poison'
		BEGIN SELECT RAISE(ABORT, 'poisoned message'); END`); err != nil {
		t.Fatalf("create trigger: %v", err)
	}
	mark := rec.Len()

	sendBody := func(room, sender, client, body string) *groupcommit.Request[writeOp, result] {
		return &groupcommit.Request[writeOp, result]{In: writeOp{send: &parley.NewMessage{
			RoomID: room, SenderID: sender, SenderName: "name", Body: body, ClientID: client}}}
	}
	send := func(room, sender, client string) *groupcommit.Request[writeOp, result] {
		return sendBody(room, sender, client, "b")
	}
	join := &groupcommit.Request[writeOp, result]{In: writeOp{f: func(w *wtx) (result, error) {
		r, err := w.room(r1.ID)
		if err != nil {
			return result{}, err
		}
		r, err = w.addMember(r, v.ID)
		return result{room: r, ok: true}, err
	}}}
	batch := []*groupcommit.Request[writeOp, result]{
		send(r1.ID, u.ID, "k"),              // 0: r1 seq 1
		send(r2.ID, u.ID, ""),               // 1: r2 seq 1
		send(r1.ID, u.ID, "k"),              // 2: repeat of 0 in the same group
		join,                                // 3: v joins r1 at read 1
		send(r1.ID, u.ID, "k"),              // 4: repeat of 0 in a later group
		send(r1.ID, v.ID, ""),               // 5: r1 seq 2
		send("nope", u.ID, ""),              // 6: not_found
		send(r2.ID, "no-such-user", ""),     // 7: not_found (not a member, and no such user)
		send(r2.ID, u.ID, ""),               // 8: r2 seq 2
		sendBody(r2.ID, u.ID, "", "poison"), // 9: breaks a constraint: internal, alone
		send(r2.ID, u.ID, ""),               // 10: r2 seq 3
	}
	done, err := s.commit(batch)
	if err != nil {
		t.Fatalf("commit() error = %v", err)
	}
	done()
	wantSeq := map[int]int64{0: 1, 1: 1, 5: 2, 8: 2, 10: 3}
	for i, seq := range wantSeq {
		if r := batch[i]; r.Err != nil || !r.Out.ok || r.Out.msg.Seq != seq {
			t.Errorf("batch[%d] = seq %d created %v, %v, want seq %d created", i, r.Out.msg.Seq, r.Out.ok, r.Err, seq)
		}
	}
	for _, i := range []int{2, 4} {
		if r := batch[i]; r.Err != nil || r.Out.ok || r.Out.msg.ID != batch[0].Out.msg.ID {
			t.Errorf("batch[%d] (repeat) = %s created %v, %v, want %s not created", i, r.Out.msg.ID, r.Out.ok, r.Err, batch[0].Out.msg.ID)
		}
	}
	if r := batch[3]; r.Err != nil || r.Out.room.MemberCount != 2 {
		t.Errorf("batch[3] (join) = %+v, %v", r.Out.room, r.Err)
	}
	if got := parley.ErrorCode(batch[6].Err); got != parley.CodeNotFound {
		t.Errorf("batch[6] (unknown room) error = %v, want not_found", batch[6].Err)
	}
	if got := parley.ErrorCode(batch[7].Err); got != parley.CodeNotFound {
		t.Errorf("batch[7] (unknown sender) error = %v, want not_found", batch[7].Err)
	}
	if got := parley.ErrorCode(batch[9].Err); got != parley.CodeInternal {
		t.Errorf("batch[9] (constraint) error = %v, want internal", batch[9].Err)
	}
	if r := parleytest.MustRoom(t, s, r1.ID); r.LastSeq != 2 || r.MemberCount != 2 {
		t.Errorf("r1 = %+v, want last_seq 2, 2 members", r)
	}
	if r := parleytest.MustRoom(t, s, r2.ID); r.LastSeq != 3 {
		t.Errorf("r2 = %+v, want last_seq 3", r)
	}
	var kinds []parley.EventKind
	for _, e := range rec.Events()[mark:] {
		kinds = append(kinds, e.Kind)
	}
	want := []parley.EventKind{parley.EventMessage, parley.EventMessage, parley.EventJoin, parley.EventMessage, parley.EventMessage, parley.EventMessage}
	if len(kinds) != len(want) {
		t.Fatalf("events = %v, want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Errorf("events = %v, want %v", kinds, want)
			break
		}
	}
}

// TestCheckpointBoundsWAL: under steady writes the checkpointer keeps the
// WAL near walRestartAt pages, restarting it from its beginning.
func TestCheckpointBoundsWAL(t *testing.T) {
	defer func(every time.Duration, at int) { checkpointEvery, walRestartAt = every, at }(checkpointEvery, walRestartAt)
	checkpointEvery, walRestartAt = 5*time.Millisecond, 64

	s, err := Open(context.Background(), Config{Path: filepath.Join(t.TempDir(), "p.db"), Sync: SyncOff})
	if err != nil {
		t.Fatalf("Open() error = %v", err)
	}
	defer s.Close()
	users := parleytest.MustCreateUsers(t, s, "u", 20)
	rooms := make([]parley.Room, len(users))
	for i, u := range users {
		rooms[i] = parleytest.MustCreateRoom(t, s, u, "r", 0)
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.ck.restarts.Load() < 3 && time.Now().Before(deadline) {
		var wg sync.WaitGroup
		for i, u := range users {
			wg.Go(func() {
				for range 20 {
					parleytest.MustSend(t, s, rooms[i], u, "a message to fill the WAL with")
				}
			})
		}
		wg.Wait()
	}
	t.Logf("restarts %d, longest WAL %d pages", s.ck.restarts.Load(), s.ck.maxLog.Load())
	if got := s.ck.restarts.Load(); got < 3 {
		t.Errorf("checkpointer restarted the WAL %d times, want ≥ 3", got)
	}
	// parley_store_checkpoint_seconds saw them (a RESTART may be running:
	// it is observed when it ends), and a PASSIVE before each.
	restarts, passives := checkpoints(t, s, "restart"), checkpoints(t, s, "passive")
	if restarts < 2 || restarts > s.ck.restarts.Load() || passives < restarts {
		t.Errorf("parley_store_checkpoint_seconds counts restart %d, passive %d; want 2 to %d restarts and as many passives or more",
			restarts, passives, s.ck.restarts.Load())
	}
	// A round of 400 messages writes well under 1,000 pages: the WAL never
	// got far past the restart point.
	if got := s.ck.maxLog.Load(); got > int64(walRestartAt)+2000 {
		t.Errorf("longest WAL = %d pages, want near %d", got, walRestartAt)
	}
}

// TestCheckpointLeavesTheWriterToReaders: while a reader holds an older
// snapshot (as `parley backup`'s VACUUM INTO does), a WAL past
// walRestartAt gets no RESTART, which would hold the writer back until the
// reader ends; once it ends, the next rounds restart the WAL.
func TestCheckpointLeavesTheWriterToReaders(t *testing.T) {
	defer func(every time.Duration, at int) { checkpointEvery, walRestartAt = every, at }(checkpointEvery, walRestartAt)
	checkpointEvery, walRestartAt = 5*time.Millisecond, 64
	s, u, room := openErased(t, filepath.Join(t.TempDir(), "p.db"), Config{Sync: SyncOff})
	defer s.Close()
	release := holdSnapshot(t, s)
	before := s.ck.restarts.Load()
	for i := 0; s.ck.deferred.Load() < 3 && s.ck.restarts.Load() == before; i++ {
		if i == 10_000 {
			t.Fatalf("%d sends, %d rounds put off for the reader, want 3", i, s.ck.deferred.Load())
		}
		parleytest.MustSend(t, s, room, u, strings.Repeat("a message to fill the WAL with ", 40))
	}
	if got := s.ck.restarts.Load(); got != before {
		t.Errorf("%d RESTART checkpoints while a reader held its snapshot, want none", got-before)
	}
	release()
	parleytest.Eventually(t, 10*time.Second, func() bool {
		parleytest.MustSend(t, s, room, u, "one more")
		return s.ck.restarts.Load() > before
	}, "no RESTART checkpoint after the reader ended")
}

// checkpoints returns the checkpoints of kind that
// parley_store_checkpoint_seconds observed in s.
func checkpoints(t *testing.T, s *Store, kind string) uint64 {
	t.Helper()
	var m dto.Metric
	if err := s.ck.took.WithLabelValues(kind).(prometheus.Metric).Write(&m); err != nil {
		t.Fatalf("parley_store_checkpoint_seconds{%s}: %v", kind, err)
	}
	return m.GetHistogram().GetSampleCount()
}

// TestCheckpointShrinksWALInSteps: a WAL that grew while a reader held
// its snapshot (a backup's copy) is cut back to walKeep by walShrinkStep
// at most a restart, not at once: freeing the blocks stalls every
// fdatasync on a filesystem that discards them (checkpoint.go).
func TestCheckpointShrinksWALInSteps(t *testing.T) {
	defer func(every time.Duration, at int, keep, step int64, shrinkEvery time.Duration) {
		checkpointEvery, walRestartAt, walKeep, walShrinkStep, walShrinkEvery = every, at, keep, step, shrinkEvery
	}(checkpointEvery, walRestartAt, walKeep, walShrinkStep, walShrinkEvery)
	checkpointEvery, walRestartAt, walKeep, walShrinkStep, walShrinkEvery = 5*time.Millisecond, 64, 1<<20, 256<<10, 20*time.Millisecond
	path := filepath.Join(t.TempDir(), "p.db")
	// No search indexer: its commits would restart the WAL too, and two
	// cuts could fall between two looks.
	s, u, room := openErased(t, path, Config{Sync: SyncOff, NoSearchIndex: true})
	defer s.Close()
	walSize := func() int64 {
		fi, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	body := strings.Repeat("a message to fill the WAL with ", 40)

	release := holdSnapshot(t, s)
	const grown = 4 << 20
	for i := 0; walSize() < grown; i++ {
		if i == 20_000 {
			t.Fatalf("the WAL holds %d bytes after %d sends, want %d", walSize(), i, grown)
		}
		parleytest.MustSend(t, s, room, u, body)
	}
	// looked waits until the checkpointer has looked at the WAL's size
	// as it is now (it looks in each round, and rounds go on while the
	// reader holds the WAL or after a send).
	looked := func() {
		t.Helper()
		parleytest.Eventually(t, 10*time.Second, func() bool { return s.ck.walSeen.Load() == walSize() }, "the checkpointer never looked at the WAL's size")
	}
	looked()
	release()

	// One send at a time, each after the checkpointer looked at the size
	// the last one left: the WAL shrinks only at a commit, so every cut
	// is seen, and is at most a step plus the one send's pages.
	prev := walSize()
	var cuts []int64
	for i := 0; prev > walKeep; i++ {
		if i == 5_000 {
			t.Fatalf("the WAL holds %d bytes after %d sends, cut %v, want %d or less", prev, i, cuts, walKeep)
		}
		parleytest.MustSend(t, s, room, u, body)
		n := walSize()
		if n < prev {
			cuts = append(cuts, prev-n)
		}
		prev = n
		looked()
	}
	t.Logf("cuts %v", cuts)
	if len(cuts) < 4 {
		t.Errorf("the WAL was cut %d times on its way from %d to %d bytes, want one a step: cuts %v", len(cuts), grown, walKeep, cuts)
	}
	for _, c := range cuts {
		if c > walShrinkStep+32<<10 {
			t.Errorf("the WAL was cut by %d bytes at once, want at most %d: cuts %v", c, walShrinkStep, cuts)
		}
	}
}

// openErased opens a store at path as cfg says, with a user and a room of
// theirs, once the checkpointer's first TRUNCATE (the one after Open) is
// over. The caller closes it, with a defer that runs before the one that
// puts back the variables the checkpointer reads.
func openErased(t *testing.T, path string, cfg Config) (*Store, parley.User, parley.Room) {
	t.Helper()
	cfg.Path = path
	s, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Open() error = %v", err)
	}
	u := parleytest.MustCreateUser(t, s, "u")
	room := parleytest.MustCreateRoom(t, s, u, "r", 0)
	parleytest.Eventually(t, 10*time.Second, func() bool { return s.ck.erases.Load() == 1 }, "no TRUNCATE checkpoint at Open")
	return s, u, room
}

// holdSnapshot begins a read transaction on one of s's readers and reads,
// so that it holds a snapshot of the WAL (as a backup's copy does), until
// release, which the test must call (Cleanup only closes the connection).
func holdSnapshot(t *testing.T, s *Store) (release func()) {
	t.Helper()
	ctx := context.Background()
	conn, err := s.rdb.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.ExecContext(ctx, `BEGIN DEFERRED`); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRowContext(ctx, `SELECT count(*) FROM messages`).Scan(new(int)); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if _, err := conn.ExecContext(ctx, `COMMIT`); err != nil {
			t.Fatal(err)
		}
	}
}
