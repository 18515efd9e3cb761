package postgres

import (
	"time"

	"parley/storagefull"
)

// SetFullClock sets the clock of the store's full-disk state (storagefull.Quiet
// counts by it). Call it before the store's first write.
func SetFullClock(s *Store, now func() time.Time) { s.full.Now = now }

// FullQuiet is how long writes must go without a refusal for a committed
// one to end the full-disk state.
const FullQuiet = storagefull.Quiet
