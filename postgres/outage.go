package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"parley"
)

// errWriteUnreachable is what a write gets while PostgreSQL cannot be
// reached. The write may have been committed (a COMMIT whose answer was
// lost), so the client is told to send again with its client-id, which
// returns the original message if it was.
var errWriteUnreachable = parley.Errorf(parley.CodeUnavailable,
	"the store is unreachable; send again with the same client-id")

// errReadUnreachable is what a read gets while PostgreSQL cannot be
// reached.
var errReadUnreachable = parley.Errorf(parley.CodeUnavailable, "the store is unreachable; try again")

// unreachable reports whether err means that PostgreSQL could not be
// reached or stopped answering, rather than that a statement failed: a
// connection that could not be made or broke (pgconn's connect errors, net
// errors, an EOF mid-answer, a connection pgx found closed), the server
// shutting down or refusing connections (SQLSTATE class 08, 57P01-57P03,
// 53300), or a deadline. Told apart by type and code, never by text.
func unreachable(err error) bool {
	if err == nil {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "57P01", "57P02", "57P03", "53300": // admin_shutdown, crash_shutdown, cannot_connect_now, too_many_connections
			return true
		}
		return len(pe.Code) >= 2 && pe.Code[:2] == "08" // connection_exception
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	switch {
	case errors.As(err, &ce), errors.As(err, &ne):
		return true
	case errors.Is(err, context.DeadlineExceeded), pgconn.Timeout(err):
		return true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	}
	// A connection pgx had found broken before this call ("conn closed"),
	// or a failure that happened before anything reached the server.
	return pgconn.SafeToRetry(err)
}

// outage logs when PostgreSQL becomes unreachable, once, and when it is
// back, once, however many calls fail in between.
type outage struct {
	log  *slog.Logger
	down atomic.Bool // set while since is not zero: ok's fast path

	mu    sync.Mutex // guards the following fields
	since time.Time  // zero while the store is reachable
	fails int        // calls refused since
}

// failed records a call that failed with err; it returns the error the
// caller gets: unavailable (the write's or the read's) when err means the
// store is unreachable, err itself otherwise.
func (o *outage) failed(err error, write bool) error {
	if !unreachable(err) {
		return err
	}
	o.mu.Lock()
	first := o.since.IsZero()
	if first {
		o.since = time.Now()
		o.down.Store(true)
	}
	o.fails++
	o.mu.Unlock()
	if first {
		o.log.Error("postgres: store unreachable; refusing writes as unavailable until it is back", "err", err)
	}
	out := errReadUnreachable
	if write {
		out = errWriteUnreachable
	}
	return fmt.Errorf("%w: %w", out, err)
}

// ok records a call that reached the store.
func (o *outage) ok() {
	if !o.down.Load() {
		return
	}
	o.mu.Lock()
	if o.since.IsZero() {
		o.mu.Unlock()
		return
	}
	since, fails := o.since, o.fails
	o.since, o.fails = time.Time{}, 0
	o.down.Store(false)
	o.mu.Unlock()
	o.log.Warn("postgres: store reachable again", "down", time.Since(since).Round(time.Millisecond), "refused", fails)
}

// errReadFull is what a read gets that PostgreSQL could not answer for a
// full disk (a sort or a hash spilling to a temporary file).
var errReadFull = parley.Errorf(parley.CodeUnavailable, "the server's storage is full; try again later")

// diskFull reports whether err is PostgreSQL's disk_full (SQLSTATE 53100):
// a file could not be extended or written for want of room.
func diskFull(err error) bool { return pgCode(err) == "53100" }

// StorageFull reports whether the store refuses writes because
// PostgreSQL's disk is full: since when (zero when it does not), and how
// many it refused since. The first write committed after 5 s without a
// refusal ends it.
func (s *Store) StorageFull() (since time.Time, refused uint64) {
	return s.full.State()
}
