package sqlite

import (
	"errors"
	"time"

	"parley"
	"parley/groupcommit"
	"parley/storagefull"
)

// StorageFull reports whether the store refuses writes because its storage
// is full: since when (zero when it does not), and how many it refused
// since. Reads are served meanwhile. The first write committed after 5 s
// without a refusal ends it.
func (s *Store) StorageFull() (since time.Time, refused uint64) { return s.full.State() }

// writeErr translates the error of a write of w from the group-commit
// writer: errClosed once closed, storagefull.ErrWrite (unavailable) for a
// full storage. A nil error or a write's own *parley.Error means its batch
// was committed.
func (s *Store) writeErr(w storagefull.Writer, err error) error {
	var pe *parley.Error
	switch {
	case err == nil, errors.As(err, &pe):
		s.full.OK()
	case errors.Is(err, groupcommit.ErrClosed):
		return errClosed
	case isFull(err):
		return s.full.Refuse(w, err)
	}
	return err
}
