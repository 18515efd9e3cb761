package webhook

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"parley"
)

// worker delivers one webhook while its node holds the lease. It owns
// the goroutines of the rooms it delivers at once.
type worker struct {
	m      *Manager
	h      parley.Webhook
	lease  parley.HookLease
	client *http.Client
	cancel context.CancelFunc
	done   chan struct{}

	renewed  atomic.Int64 // when the lease was last taken or renewed, unix ns
	failures atomic.Int64 // consecutive failed attempts, over all rooms
}

// ended reports whether the worker's goroutine has returned.
func (w *worker) ended() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

// leased reports whether the lease is still this node's by its own
// clock: renewed less than LeaseTTL ago. A worker whose renewals stop
// (the store unreachable) stops delivering before another node may take
// the webhook over.
func (w *worker) leased() bool {
	return w.m.cfg.Now().UnixNano()-w.renewed.Load() < int64(w.m.cfg.LeaseTTL)
}

func (w *worker) run(ctx context.Context) {
	defer close(w.done)
	defer w.cancel()
	cfg := &w.m.cfg
	for ctx.Err() == nil && w.leased() {
		ps, err := cfg.Store.HookPositions(ctx, w.h)
		if err != nil {
			if ctx.Err() == nil {
				cfg.Logger.Warn("webhook positions", "webhook", w.h.Name, "err", err)
			}
			wait(ctx, cfg.Poll)
			continue
		}
		var lag int64
		for _, p := range ps {
			lag += p.LastSeq - p.Seq + p.LastChange - p.Change + p.LastEvent - p.Event
		}
		w.m.lag.WithLabelValues(w.h.Name).Set(float64(lag))
		if len(ps) == 0 {
			wait(ctx, cfg.Poll)
			continue
		}
		// Up to Concurrency rooms at once, each room's events in order.
		var wg sync.WaitGroup
		sem := make(chan struct{}, cfg.Concurrency)
		var stop, failed, moved atomic.Bool
		for _, p := range ps {
			sem <- struct{}{}
			if stop.Load() || ctx.Err() != nil {
				<-sem
				break
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				ok, err := w.room(ctx, p)
				if ok {
					moved.Store(true)
				}
				if errors.Is(err, errStop) {
					stop.Store(true)
					w.cancel()
				} else if err != nil && ctx.Err() == nil {
					failed.Store(true)
					cfg.Logger.Warn("webhook room", "webhook", w.h.Name, "room", p.RoomID, "err", err)
				}
			}()
		}
		wg.Wait()
		if stop.Load() {
			return
		}
		switch {
		case failed.Load(): // the store failed: look again at the next poll, not at once
			wait(ctx, cfg.Poll)
		case !moved.Load():
			// Behind, yet nothing could go out: a message changed again
			// after the cut, each time (merge waits for it). Look again
			// soon, without spinning on the store.
			wait(ctx, min(cfg.Poll, stuckWait))
		}
	}
}

// stuckWait is the pause after a round that moved no room's position
// although the rooms were behind.
const stuckWait = 10 * time.Millisecond

// A syncer is a store whose readers see a commit before it is durable
// (SQLite with --sync full fsyncs the WAL after the commit): Synced
// returns once every commit made before the call is durable.
type syncer interface {
	Synced(ctx context.Context) error
}

// synced waits, on a syncer, until every commit a room's reads just saw
// is durable: a delivery cannot be taken back, and a commit lost
// with the machine's power would give its seq to another message, which
// the receiver, deduplicating by id, would then drop. On PostgreSQL a
// commit is visible only once durable (synchronous_commit on).
func synced(ctx context.Context, st Store) error {
	if s, ok := st.(syncer); ok {
		return s.Synced(ctx)
	}
	return nil
}

// room delivers the room's next events after p (at most a page each of
// member and room events, sends and changes) and moves the stored
// position past each. Each stream is read up to p's last positions only,
// however far it has gone on since: those came from one read of the
// room's row, whose three counters each write moves in its own
// transaction, so they are one consistent cut of the room, and every
// send, change or event before that cut is either read or, on a full
// page, waited for (merge). Read further, a stream would show what was
// made after a commit of another stream that was not read (it was not
// behind at the cut), and the merge would deliver the later one first.
// It reports whether the position moved (or a failed delivery asks for
// the room to be read again at once).
func (w *worker) room(ctx context.Context, p parley.HookPosition) (moved bool, err error) {
	st := w.m.cfg.Store
	var evs []parley.RoomEvent
	var sends, changes []parley.Message
	if p.LastEvent > p.Event {
		if evs, err = st.RoomEvents(ctx, p.RoomID, p.Event, parley.MaxPageLimit); err != nil {
			return false, err
		}
	}
	if p.LastSeq > p.Seq {
		if sends, err = st.Messages(ctx, p.RoomID, parley.Page{After: p.Seq, Limit: parley.MaxPageLimit}); err != nil {
			return false, err
		}
	}
	if p.LastChange > p.Change {
		if changes, err = st.Changed(ctx, p.RoomID, p.Change, parley.MaxPageLimit); err != nil {
			return false, err
		}
	}
	evs = upTo(evs, func(e *parley.RoomEvent) bool { return e.N <= p.LastEvent })
	sends = upTo(sends, func(m *parley.Message) bool { return m.Seq <= p.LastSeq })
	// A message changed again after the cut carries its later change
	// number only: it is delivered at that number, after the cut.
	changes = upTo(changes, func(m *parley.Message) bool { return m.Change <= p.LastChange })
	at := p
	if p.LastEvent > p.Event && len(evs) == 0 {
		// Every event up to the counter read is committed, and none
		// past the position is left: retention deleted them (a webhook
		// behind by more than the room's retention). Move past them.
		at.Event = p.LastEvent
	}
	// A page is full when it holds a page's worth up to the cut: more may
	// follow before the cut.
	full := [3]bool{len(evs) == parley.MaxPageLimit, len(sends) == parley.MaxPageLimit, len(changes) == parley.MaxPageLimit}
	out, err := merge(p.RoomID, at, evs, sends, changes, full)
	if err != nil {
		return false, err
	}
	// After the reads, so that it covers every commit they saw: a
	// delivery goes out only once durable.
	if slices.ContainsFunc(out, func(ev event) bool { return w.h.Wants(ev.kind) }) {
		if err := synced(ctx, st); err != nil {
			return false, err
		}
	}
	stored := p // the position as stored
	for _, ev := range out {
		at.Seq, at.Change, at.Event = ev.seq, ev.change, ev.event
		if !w.h.Wants(ev.kind) {
			continue // moved past with the next delivery, or at the end
		}
		if err := w.deliver(ctx, ev); errors.Is(err, errReread) {
			return true, nil // the run loop reads the room again at once
		} else if err != nil {
			return moved, err
		}
		if err := w.advance(ctx, at); err != nil {
			return moved, err
		}
		stored, moved = at, true
	}
	if at != stored { // past events it does not want, or expired ones
		return true, w.advance(ctx, at)
	}
	return moved, nil
}

// upTo returns the prefix of xs, in stream order, whose items are in.
func upTo[T any](xs []T, in func(*T) bool) []T {
	for i := range xs {
		if !in(&xs[i]) {
			return xs[:i]
		}
	}
	return xs
}

func (w *worker) advance(ctx context.Context, p parley.HookPosition) error {
	err := w.m.cfg.Store.AdvanceWebhook(ctx, w.lease, p)
	var pe *parley.Error
	if errors.As(err, &pe) && pe.Code == parley.CodeConflict {
		w.m.cfg.Logger.Info("webhook lease lost", "webhook", w.h.Name, "node", w.m.cfg.Node)
		return errStop
	}
	return err
}

// deliver sends ev once: nil when the receiver took it; errReread after
// a failure and its backoff (the caller reads the event again, as it is
// now, and tries again); errStop when the webhook is paused (MaxFailures)
// or the lease is lost; ctx's error when the worker stops.
func (w *worker) deliver(ctx context.Context, ev event) error {
	cfg := &w.m.cfg
	if !w.leased() {
		return errStop
	}
	res, err := post(ctx, w.client, w.h.URL, []byte(w.h.Secret), ev.id, ev.body, cfg.Now())
	if ctx.Err() != nil {
		return ctx.Err()
	}
	w.m.deliveries.WithLabelValues(res).Inc()
	if res == resultOK {
		w.failures.Store(0)
		return nil
	}
	n := w.failures.Add(1)
	cfg.Logger.Warn("webhook delivery failed", "webhook", w.h.Name, "event", ev.id, "result", res, "failures", n, "err", err)
	if n >= int64(cfg.MaxFailures) {
		reason := res + ": " + err.Error()
		if perr := cfg.Store.PauseWebhook(ctx, w.lease, reason); perr != nil {
			cfg.Logger.Warn("webhook pause", "webhook", w.h.Name, "err", perr)
			return errStop
		}
		w.m.pauses.Inc()
		cfg.Logger.Error("webhook paused: too many failed deliveries; parley webhook resume replays from where it stopped",
			"webhook", w.h.Name, "failures", n, "last", reason)
		return errStop
	}
	if !wait(ctx, w.m.backoff(n)) {
		return ctx.Err()
	}
	// The next attempt reads the event again from the store: a message
	// deleted or edited during the backoff is delivered as it is now,
	// never as it was (design §5, deleted means deleted).
	return errReread
}

// errReread is deliver's word that an attempt failed and its backoff has
// passed: the room is read again from its stored position.
var errReread = errors.New("webhook: read the room again")
