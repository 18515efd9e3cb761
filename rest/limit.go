package rest

import (
	"math"
	"net/http"
	"strconv"

	"parley"
)

// limited wraps an authenticated route that creates something other
// people receive or that stays stored: it takes one token from the
// caller's bucket in the send limiter before doing any work. A refusal is
// rate_limited (429) with Retry-After in whole seconds, rounded up.
//
// Sending a message and creating a room share one budget, so that a user
// held back on one cannot switch to the other. Joins and leaves are not
// limited: they create nothing new (a user's memberships are bounded by
// the rooms there are). Read marks have a budget of their own (idleRead).
func (h *Handler) limited(f handlerFunc) handlerFunc {
	if h.sendLimit == nil {
		return f
	}
	return func(w http.ResponseWriter, r *http.Request) error {
		if ok, wait := h.sendLimit.Allow(userOf(r).ID); !ok {
			secs := max(1, int64(math.Ceil(wait.Seconds())))
			w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
			return parley.Errorf(parley.CodeRateLimited, "over %g messages and new rooms a second (bursts of %d); retry in %d s",
				h.sendLimit.Rate(), h.sendLimit.Burst(), secs)
		}
		return f(w, r)
	}
}

// idleRead takes one token from the caller's bucket in the read limiter
// for a read mark (PUT .../read) that moved no read position, and refuses
// with rate_limited (429, Retry-After in whole seconds) when there is
// none. The mark itself cost no store write (chat answers it from the hot
// data); the refusal tells a client that repeats itself to stop.
//
// A mark that moves a position is never counted: a client marks rooms
// read as fast as messages arrive, which follows other people's rate, not
// its own, and each message can move each member's position once, so
// those writes are bounded by the messages, which are limited themselves.
// So a client that marks what it shows, once per newer message, never
// meets this limit; only repeats do (a second tab marking the same
// message, a retry), at up to --rest-read-rate a second with bursts of
// twice that.
func (h *Handler) idleRead(w http.ResponseWriter, userID string) error {
	if h.readLimit == nil {
		return nil
	}
	if ok, wait := h.readLimit.Allow(userID); !ok {
		secs := max(1, int64(math.Ceil(wait.Seconds())))
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
		return parley.Errorf(parley.CodeRateLimited, "over %g read marks a second that move nothing (bursts of %d); retry in %d s",
			h.readLimit.Rate(), h.readLimit.Burst(), secs)
	}
	return nil
}
