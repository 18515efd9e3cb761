package rest

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"parley"
)

// Logins and sign-ups are limited by the client's address (clientAddr),
// and failed logins also by the name tried:
//
//   - Sign-ups: a token bucket per address (SignupLimit), taken before
//     any work, since each sign-up hashes a password.
//   - Failed logins: an exponential wait per address (LoginByAddress) and
//     per name (LoginByName), after a few free failures, capped and
//     forgiven with time (ratelimit.Backoff). A waiting key is answered
//     429 rate_limited with Retry-After, before the password is checked,
//     so a guess costs the server nothing and tells the guesser nothing.
//     Names are counted whether or not they exist: an unknown name and a
//     wrong password keep the same answer. Only failures count (OWASP):
//     a success, however many arrive at once, makes nobody wait.
//   - Device cookies (OWASP's "Slow Down Online Guessing Attacks with
//     Device Cookies"): a successful login sets an HttpOnly cookie that
//     says "this browser logged in as this name". A login for that name
//     that carries it is counted against that device alone, not against
//     the name or the address, so an attacker who keeps a name waiting
//     (or shares its owner's address) cannot lock the owner out of a
//     browser they used before. A device that fails waits like a name.
//   - Concurrent password checks: each key's limit lets an attempt check
//     its password only while the key's failures on record plus its
//     checks in flight leave room under its free failures (one check at
//     a time once the key has waited), so parallel guesses cannot slip
//     past the count; and at most LoginConcurrency checks run at once on
//     the node. An attempt with no room waits in line, up to LoginWait;
//     past it the answer is 503 unavailable "server busy" with
//     Retry-After, which names the real reason and counts no failure.
//
// The line is a wait, not a refusal: 100 users behind one address who
// all log in at once with the right password all get in, one free slot
// of the address after another.

// FailureLimit slows down the failed logins of a key (an address, a name,
// a device): ratelimit.Backoff counts them on one node, the Redis one
// across a cluster. It is safe for concurrent use.
type FailureLimit interface {
	// Begin starts a login attempt of key. If key is waiting for its
	// failures it returns a nil end and the time left (rate_limited).
	// Otherwise it returns end, to call exactly once with the outcome: a
	// failure is counted, a success counts nothing. While the attempts in
	// flight leave no room it waits for them until ctx is done, then
	// returns an error and reserves nothing (server busy).
	Begin(ctx context.Context, key string) (end func(failed bool), retryAfter time.Duration, err error)
	// Reset forgets key's failures (a name's after its owner logged in).
	Reset(key string)
}

// DefaultLoginWait is how long a login may wait in line for its turn to
// check a password before it is answered "server busy".
const DefaultLoginWait = 10 * time.Second

// busyRetry is the Retry-After of a login refused as busy: that of every
// 503 unavailable of the API.
const busyRetry = 5 * time.Second

// deviceCookie is the name of the device cookie.
const deviceCookie = "parley_device"

// DeviceCookieTTL is how long a device cookie vouches for its browser.
const DeviceCookieTTL = 30 * 24 * time.Hour

// limitReasons label parley_http_limited_total.
var limitReasons = []string{"signup", "login_address", "login_name", "login_device", "login_busy"}

// refuse answers 429 rate_limited with Retry-After in whole seconds,
// rounded up, and counts the refusal under reason.
func (h *Handler) refuse(w http.ResponseWriter, reason string, wait time.Duration, format string) error {
	secs := max(1, int64(math.Ceil(wait.Seconds())))
	w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	h.limitedTotal.WithLabelValues(reason).Inc()
	return parley.Errorf(parley.CodeRateLimited, format, secs)
}

// busy answers 503 unavailable with Retry-After: the login waited its
// whole LoginWait in line for its turn to check its password.
func (h *Handler) busy(w http.ResponseWriter) error {
	secs := int64(busyRetry / time.Second)
	w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	h.limitedTotal.WithLabelValues("login_busy").Inc()
	return parley.Errorf(parley.CodeUnavailable, "server busy: too many logins at once; retry in %d s", secs)
}

// allowSignup takes a token from the client address's sign-up bucket.
func (h *Handler) allowSignup(w http.ResponseWriter, r *http.Request) error {
	if h.signupLimit == nil {
		return nil
	}
	if ok, wait := h.signupLimit.Allow(addrKey(h.clientAddr(r))); !ok {
		return h.refuse(w, "signup", wait, "too many sign-ups from this address; retry in %d s")
	}
	return nil
}

// loginAttempt is one login let through its limits to check a password:
// the reservations it holds and the node's check slot.
type loginAttempt struct {
	endAddr func(failed bool) // the address's reservation; nil for none
	endName func(failed bool) // the name's or the device's; nil for none
	nameKey string            // the key of endName in loginByName
}

// beginLogin lets a login for name through its limits and takes one of
// the node's check slots, waiting in line up to LoginWait, or refuses it
// with rate_limited (its key is waiting for failures) or unavailable
// (the wait in line is over).
func (h *Handler) beginLogin(w http.ResponseWriter, r *http.Request, name string) (*loginAttempt, error) {
	h.loginsWaiting.Inc()
	defer h.loginsWaiting.Dec()
	ctx, cancel := context.WithTimeout(r.Context(), h.loginWait)
	defer cancel()
	a := &loginAttempt{}
	if h.loginByName != nil {
		if nonce, ok := h.device(r, name); ok {
			a.nameKey = "device\x00" + nonce
			end, wait, err := h.loginByName.Begin(ctx, a.nameKey)
			switch {
			case err != nil:
				return nil, h.busy(w)
			case end == nil:
				return nil, h.refuse(w, "login_device", wait, "too many failed logins from this browser; retry in %d s")
			}
			a.endName = end
			return h.takeSlot(ctx, w, a)
		}
	}
	if h.loginByAddr != nil {
		end, wait, err := h.loginByAddr.Begin(ctx, addrKey(h.clientAddr(r)))
		switch {
		case err != nil:
			return nil, h.busy(w)
		case end == nil:
			return nil, h.refuse(w, "login_address", wait, "too many failed logins from this address; retry in %d s")
		}
		a.endAddr = end
	}
	if h.loginByName != nil {
		a.nameKey = "name\x00" + name
		end, wait, err := h.loginByName.Begin(ctx, a.nameKey)
		switch {
		case err != nil:
			a.end(false) // nothing was checked
			return nil, h.busy(w)
		case end == nil:
			a.end(false)
			return nil, h.refuse(w, "login_name", wait, "too many failed logins for this name; retry in %d s")
		}
		a.endName = end
	}
	return h.takeSlot(ctx, w, a)
}

// takeSlot takes one of the node's password-check slots for a and
// returns a, waiting until ctx is done; then it ends a's reservations,
// counting nothing, and answers busy.
func (h *Handler) takeSlot(ctx context.Context, w http.ResponseWriter, a *loginAttempt) (*loginAttempt, error) {
	select {
	case h.loginSlots <- struct{}{}:
		return a, nil
	case <-ctx.Done():
		a.end(false)
		return nil, h.busy(w)
	}
}

// end ends a's reservations: failed counts a failure on each.
func (a *loginAttempt) end(failed bool) {
	if a.endAddr != nil {
		a.endAddr(failed)
	}
	if a.endName != nil {
		a.endName(failed)
	}
}

// endLogin settles an attempt with the login's outcome and frees its
// check slot: a wrong name or password counts a failure; a success
// counts none and clears the name's (or device's) failures, but not the
// address's; any other outcome (the store unavailable) counts nothing.
func (h *Handler) endLogin(a *loginAttempt, err error) {
	h.settleLogin(a, parley.ErrorCode(err) == parley.CodeUnauthorized, err == nil)
}

// settleLogin settles a password check let through beginLogin and frees
// its check slot: failed counts a failure on each of its keys; ok clears
// the name's (or device's) failures, but not the address's.
func (h *Handler) settleLogin(a *loginAttempt, failed, ok bool) {
	<-h.loginSlots
	a.end(failed)
	if ok && a.nameKey != "" {
		h.loginByName.Reset(a.nameKey)
	}
}

// setDevice sets a device cookie for name, when logins are limited by
// name.
func (h *Handler) setDevice(w http.ResponseWriter, r *http.Request, name string) {
	if h.loginByName == nil {
		return
	}
	nonce := make([]byte, 16)
	rand.Read(nonce)
	n := base64.RawURLEncoding.EncodeToString(nonce)
	exp := strconv.FormatInt(h.now().Add(DeviceCookieTTL).Unix(), 10)
	http.SetCookie(w, &http.Cookie{
		Name:     deviceCookie,
		Value:    n + "." + exp + "." + h.deviceMAC(name, n, exp),
		Path:     "/api/tokens",
		MaxAge:   int(DeviceCookieTTL / time.Second),
		HttpOnly: true,
		Secure:   r.TLS != nil || h.isTrusted(peerAddr(r.RemoteAddr)) && r.Header.Get("X-Forwarded-Proto") == "https",
		SameSite: http.SameSiteStrictMode,
	})
}

// device returns the nonce of the request's device cookie if it is
// unexpired and vouches for name.
func (h *Handler) device(r *http.Request, name string) (string, bool) {
	c, err := r.Cookie(deviceCookie)
	if err != nil {
		return "", false
	}
	n, rest, ok1 := strings.Cut(c.Value, ".")
	exp, mac, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 {
		return "", false
	}
	if !hmac.Equal([]byte(mac), []byte(h.deviceMAC(name, n, exp))) {
		return "", false
	}
	if t, err := strconv.ParseInt(exp, 10, 64); err != nil || h.now().Unix() >= t {
		return "", false
	}
	return n, true
}

// deviceMAC is the MAC of a device cookie: the name it vouches for, its
// nonce and its expiry, under the handler's device key.
func (h *Handler) deviceMAC(name, nonce, exp string) string {
	m := hmac.New(sha256.New, h.deviceKey)
	m.Write([]byte("parley device\x00" + name + "\x00" + nonce + "\x00" + exp))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}
