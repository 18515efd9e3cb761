package postgres

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
