package postgres

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// How the nodes wake each other's search indexers for what one leaves
// behind (indexer.go, "Waking").
//
// The announcement is a NOTIFY on notifyChannel whose payload is the
// announcing node's mark and its schema (current_schema(), as the sender's
// search_path resolves it): a listener hears every schema of its
// database on the one channel, and wakes its indexer only for another
// node of its own schema. The NOTIFY is a statement of its own, never in
// a send's transaction: there it would hold PostgreSQL's lock on the
// notification queue over the commit's WAL flush, and so serialise every
// node's commits. Alone it writes no WAL and waits for no flush.

// notifyChannel is the channel of the announcements.
const notifyChannel = "parley_search_index"

// listenRetry is the wait before the listener connects again after its
// connection failed; meanwhile the backstop finds the messages.
const listenRetry = time.Second

// notify announces to the other nodes that this node's indexer leaves
// messages behind (indexer.go, "Waking"): after a failed round, and at
// handOver. A failed NOTIFY is not tried again: the other nodes find the
// messages within their backstop.
func (x *indexer) notify() {
	if x.tune.quiet {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
	defer cancel()
	x.rounds.WithLabelValues("notify").Inc()
	_, _ = x.s.pool.Exec(ctx, `SELECT pg_notify($1, $2 || ' ' || current_schema())`, notifyChannel, x.node)
}

// notifyTimeout bounds an announcement: a failed round's retry, and a
// node's Close, wait for it.
const notifyTimeout = time.Second

// listen is the goroutine that LISTENs, on a connection of its own, for
// the other nodes' announcements and wakes the indexer for each, until
// stop. A connection that fails is opened again after listenRetry, and
// the indexer woken then for what it may have missed; the outage is
// logged once, at its start and at its end.
func (x *indexer) listen() {
	defer x.wg.Done()
	first, down := true, false
	for {
		err := x.listenOn(func() {
			if first {
				close(x.listening)
				first = false
			} else {
				x.kick() // what was announced while nobody listened
			}
			if down {
				down = false
				x.log.Info("postgres: the search indexer listens to the other nodes' announcements again")
			}
		})
		if x.ctx.Err() != nil {
			return
		}
		if first {
			close(x.listening) // the backstop finds the others' messages meanwhile
			first = false
		}
		if !down {
			down = true
			x.log.Warn("postgres: the search indexer does not hear the other nodes' announcements; it looks for unindexed messages every "+
				x.tune.backstop.String()+" until it does", "err", err)
		}
		select {
		case <-time.After(listenRetry):
		case <-x.ctx.Done():
			return
		}
	}
}

// listenOn connects, LISTENs, calls listening and wakes the indexer for
// each announcement of another node of its schema, until the connection
// fails or stop.
func (x *indexer) listenOn(listening func()) error {
	conn, err := pgx.ConnectConfig(x.ctx, x.listenCC.Copy())
	if err != nil {
		return err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn.Close(ctx)
		cancel()
	}()
	var schema string
	if _, err := conn.Exec(x.ctx, "LISTEN "+notifyChannel); err != nil {
		return err
	}
	if err := conn.QueryRow(x.ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		return err
	}
	if x.tune.listened != nil {
		x.tune.listened(conn.PgConn().PID())
	}
	listening()
	for {
		n, err := conn.WaitForNotification(x.ctx)
		if err != nil {
			return err
		}
		node, from, _ := strings.Cut(n.Payload, " ")
		if from != schema {
			continue
		}
		if x.tune.heard != nil {
			x.tune.heard(node)
		}
		if node != x.node {
			x.kick()
		}
	}
}
