package postgres

import "parley"

// SetMinSendBatch sets the smallest batch of sends that takes the path of
// sends only (trySends): 1 for every batch of sends, a number above
// MaxBatch for none. Call it before the store's first write.
func SetMinSendBatch(s *Store, n int) { s.minSendBatch = n }

// Queued returns how many writes wait for the store's writers.
func Queued(s *Store) int {
	n := 0
	for _, w := range s.w {
		n += w.Queued()
	}
	return n
}

// SetAfterCommit sets a function the writer calls with the events of each
// committed batch, after its COMMIT and before its events go to OnCommit
// (they wait for the function to return). Call it before the store's
// first write.
func SetAfterCommit(s *Store, f func([]parley.Event)) { s.afterCommit = f }

// WriterOf returns the index of the writer of the writes whose shard is key
// (a room's id; a direct room's pair for its creation).
func WriterOf(s *Store, key string) int { return s.writerOf(key) }

// SetFenceWait sets a function a writer calls when its batch holds a write
// that runs alone (a direct room's creation) and must first wait for the
// other writers' batches in flight. Call it before the store's first write.
func SetFenceWait(s *Store, f func()) { s.fenceWait = f }
