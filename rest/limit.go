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
// held back on one cannot switch to the other. Joins, leaves and read
// marks are not limited: they create nothing new (a user's memberships are
// bounded by the rooms there are), and a client marks rooms read as fast
// as messages arrive, which follows other people's rate, not its own.
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
