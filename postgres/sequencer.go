package postgres

import "sync"

// sequencer hands the events of the node's writers to OnCommit in commit
// order. A writer takes a ticket before its COMMIT goes out (with the rest
// of the batch when the batch is one pipeline, tryBatch; after the rooms'
// locks were granted otherwise, trySends) and calls done with it after
// the commit's outcome, whatever it is; done waits for the earlier
// tickets.
//
// Tickets agree with the order in which the node's transactions can see
// one another, although a ticket may be taken before the batch's locks are
// granted. The writes that touch one room (its row, its members, its
// messages), and those that race for one key (a user name, a direct
// room's pair), go through one writer (Store.write picks it by
// writeOp.shard), which runs its batches one after another, each done
// before the next is taken; so two batches of the node in flight at once
// never wait for each other's rows. The one write that may touch another
// shard's rows, a direct room's creation (crossShard), runs with no other
// batch in flight (Store.fence). A write of one writer that depends on
// another writer's commit (a send into a direct room the other writer
// created, as soon as a reader sees the room) was handed over after that
// commit, so it takes a later ticket. What the tickets do not order is
// the commits of other nodes: those reach this node through the cluster's
// relay, in each room's seq order.
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
