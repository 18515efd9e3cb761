package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"parley/chat"
)

// readyTimeout bounds each check of /readyz.
const readyTimeout = 500 * time.Millisecond

// readyCheck is one dependency that /readyz checks.
type readyCheck struct {
	name string
	ping func(ctx context.Context) error
}

// storageFull is a store that may refuse writes for a full storage
// (sqlite.Store, postgres.Store).
type storageFull interface {
	StorageFull() (since time.Time, refused uint64)
}

// degraded is a check's answer for a dependency that serves, but not
// wholly: /readyz names it and still answers 200.
type degraded string

func (d degraded) Error() string { return string(d) }

// readyChecks are the node's dependencies: the store, and in cluster mode
// the broker and Redis.
//
// A store whose storage is full answers reads and refuses writes as
// unavailable until a write is committed again: the store check names it
// ("store: degraded: storage full since ...") and /readyz stays 200. A 503
// would take the node out of a load balancer's rotation, where no write
// could reach it to find that there is room again, and would stop the
// reads it still serves; on PostgreSQL every node has the same disk.
func (m *Main) readyChecks(svc *chat.Service) []readyCheck {
	ping := svc.Ping
	if f, ok := m.durable.(storageFull); ok {
		ping = func(ctx context.Context) error {
			if err := svc.Ping(ctx); err != nil {
				return err
			}
			if since, refused := f.StorageFull(); !since.IsZero() {
				return degraded(fmt.Sprintf("degraded: storage full since %s, %d writes refused as unavailable; reads are served",
					since.UTC().Format(time.RFC3339), refused))
			}
			return nil
		}
	}
	checks := []readyCheck{{"store", ping}}
	if m.cluster != nil {
		checks = append(checks, m.cluster.checks()...)
	}
	return checks
}

// readyHandler answers /readyz: it runs every check at once, each with its
// own deadline of timeout, and answers 200 when all pass (a degraded
// answer passes), else 503, with one line per dependency ("store: ok",
// "redis: <why>", "store: degraded: <why>"). A check that does
// not return by its deadline (a client that ignores its context, a server
// that accepts and never answers) is reported as timed out and left to
// finish on its own: it holds nothing but its goroutine, which the
// client's own timeouts end.
func readyHandler(timeout time.Duration, checks []readyCheck) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		errs := make([]chan error, len(checks))
		for i, c := range checks {
			errs[i] = make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), timeout)
				defer cancel()
				errs[i] <- c.ping(ctx)
			}()
		}
		deadline := time.NewTimer(timeout)
		defer deadline.Stop()
		var b strings.Builder
		status := http.StatusOK
		expired := false
		for i, c := range checks {
			var err error
			if !expired {
				select {
				case err = <-errs[i]:
				case <-deadline.C:
					expired = true
				}
			}
			if expired { // the other checks had the same time
				select {
				case err = <-errs[i]:
				default:
					err = fmt.Errorf("no answer within %v", timeout)
				}
			}
			var d degraded
			if errors.As(err, &d) {
				fmt.Fprintf(&b, "%s: %v\n", c.name, d)
			} else if err != nil {
				status = http.StatusServiceUnavailable
				fmt.Fprintf(&b, "%s: %v\n", c.name, err)
			} else {
				fmt.Fprintf(&b, "%s: ok\n", c.name)
			}
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		w.Write([]byte(b.String()))
	})
}
