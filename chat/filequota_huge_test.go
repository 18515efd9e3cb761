package chat_test

import (
	"crypto/sha256"
	"math"
	"strings"
	"testing"

	"parley"
	"parley/bulk"
)

// TestFileQuotaHugeTotal: a user whose stored files total more than an
// int64 holds (two rows of nearly MaxInt64 bytes, as an import wrote
// them before it bounded file sizes) is over the quota: an upload is
// too_large with the quota's message, not an internal error, on both
// stores; another user uploads as before.
func TestFileQuotaHugeTotal(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(t *testing.T) fileDB) {
		w := newFileWorld(t, open, 10_000)
		sink, ok := w.db.(bulk.Sink)
		if !ok {
			t.Fatalf("%T is no bulk.Sink", w.db)
		}
		sum := sha256.Sum256([]byte("x"))
		var huge []bulk.File
		for _, id := range []string{"huge1", "huge2"} {
			huge = append(huge, bulk.File{ID: id, RoomID: w.room.ID, Uploader: w.alice.ID, Name: id + ".bin",
				Type: "application/octet-stream", Size: math.MaxInt64 - 1, SHA256: sum[:], CreatedAt: w.now})
		}
		if _, err := sink.Import(ctx, &bulk.Batch{Files: huge}); err != nil {
			t.Fatalf("write the huge rows: %v", err)
		}
		_, err := w.s.Upload(ctx, w.alice, w.room.ID, "a.txt", []byte("abc"))
		if parley.ErrorCode(err) != parley.CodeTooLarge || !strings.Contains(err.Error(), "quota") {
			t.Errorf("alice's Upload over files totalling twice MaxInt64 = %v (code %q), want too_large naming the quota", err, parley.ErrorCode(err))
		}
		if _, err := w.s.Upload(ctx, w.bob, w.room.ID, "b.txt", []byte("abc")); err != nil {
			t.Errorf("bob's Upload = %v", err)
		}
	})
}
