package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// liveness is the store's probe: it tells a PostgreSQL that stopped
// answering (a stopped or swapping server, a network black hole: the
// sockets stay open and nothing answers) from one that is slow under
// load, so that new calls are refused at once instead of each waiting
// for its deadline. It pings on a connection of its own (not queued
// behind the pool's, which a busy store keeps busy) every interval; two
// pings in a row unanswered within timeout (the second sent at once after
// the first) mark the store down, within about interval + 2 × timeout of
// its last answer, and the first answered one marks it up again. One slow commit never does:
// only the probe decides.
//
// While the store is down, every new write and read fails at once as
// unavailable (outage: logged once); the calls already in flight keep
// their own wait (Config.WriteTimeout, their context).
type liveness struct {
	interval time.Duration
	timeout  time.Duration
	connect  func(ctx context.Context) (pinger, error)

	down atomic.Bool   // two pings in a row went unanswered
	stop chan struct{} // closed by close
	done chan struct{} // closed when the probe has returned
}

// pinger is the probe's connection.
type pinger interface {
	Ping(ctx context.Context) error
	Close(ctx context.Context) error
}

// errNoAnswer is what a call refused while the probe holds the store
// down wraps: a deadline, so that unreachable() takes it for one.
var errNoAnswer = fmt.Errorf("the liveness probe got no answer: %w", context.DeadlineExceeded)

// newLiveness returns a probe of the database of cc (not started), with
// a ping unanswered for timeout counting as a miss, every timeout/2.
func newLiveness(cc *pgx.ConnConfig, timeout time.Duration) *liveness {
	return &liveness{
		interval: timeout / 2,
		timeout:  timeout,
		connect: func(ctx context.Context) (pinger, error) {
			c := cc.Copy()
			c.ConnectTimeout = timeout
			conn, err := pgx.ConnectConfig(ctx, c)
			if err != nil {
				return nil, err // not a nil *pgx.Conn in the interface
			}
			return conn, nil
		},
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
}

// isDown reports whether the probe holds the store down; false for no
// probe.
func (l *liveness) isDown() bool { return l != nil && l.down.Load() }

// run is the probe's goroutine, until close; onDown and onUp hear each
// change.
func (l *liveness) run(onDown func(error), onUp func()) {
	defer close(l.done)
	var conn pinger
	defer func() {
		if conn != nil {
			ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
			conn.Close(ctx)
			cancel()
		}
	}()
	t := time.NewTicker(l.interval)
	defer t.Stop()
	misses := 0
	for {
		if misses != 1 { // a first miss is tried again at once
			select {
			case <-l.stop:
				return
			case <-t.C:
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
		var err error
		if conn == nil {
			conn, err = l.connect(ctx)
		}
		if err == nil {
			err = conn.Ping(ctx)
		}
		cancel()
		if err != nil {
			if conn != nil {
				cctx, ccancel := context.WithTimeout(context.Background(), l.timeout)
				conn.Close(cctx) // a new one next time: this one may hold a hung answer
				ccancel()
				conn = nil
			}
			misses++
			if misses >= 2 && !l.down.Load() && answerless(err) {
				l.down.Store(true)
				onDown(err)
			}
			continue
		}
		misses = 0
		if l.down.Swap(false) {
			onUp()
		}
	}
}

// answerless reports whether a probe's failure is a server that does not
// answer (or cannot be reached), rather than one that answers with an
// error (a refused login, a database that does not exist): only the
// first kind refuses the store's calls.
func answerless(err error) bool {
	var pe *pgconn.PgError
	return !errors.As(err, &pe) || unreachable(err)
}

// close stops the probe.
func (l *liveness) close() {
	close(l.stop)
	<-l.done
}
