package cache

// SearchBytesUsed is the indexes' estimate of their heap (what
// Config.SearchBytes bounds), for the memory benchmark.
func SearchBytesUsed(s *Store) int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.search.used
}
