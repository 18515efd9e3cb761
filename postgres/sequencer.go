package postgres

import "sync"

// sequencer hands the events of the node's writers to OnCommit in commit
// order. A writer takes a ticket just before it sends COMMIT and calls done
// with it after the commit's outcome, whatever it is; done waits for the
// earlier tickets. Two transactions that change one room cannot take their
// tickets the other way round: the second waits for the first's room lock,
// which the first holds until its COMMIT, after its ticket.
type sequencer struct {
	mu   sync.Mutex // guards the following fields
	cond sync.Cond  // signalled when turn moves
	next uint64     // the next ticket to hand out
	turn uint64     // the ticket whose events go next
}

func newSequencer() *sequencer {
	q := &sequencer{}
	q.cond.L = &q.mu
	return q
}

// ticket returns the next place in commit order.
func (q *sequencer) ticket() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	t := q.next
	q.next++
	return t
}

// done waits for ticket t's turn, calls emit (when not nil) and passes the
// turn on. Each ticket must be done exactly once.
func (q *sequencer) done(t uint64, emit func()) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.turn != t {
		q.cond.Wait()
	}
	defer func() { // even if emit panics: the later tickets must not wait forever
		q.turn++
		q.cond.Broadcast()
	}()
	if emit != nil {
		emit()
	}
}
