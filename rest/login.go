package rest

import (
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
//     wrong password keep the same answer.
//   - Device cookies (OWASP's "Slow Down Online Guessing Attacks with
//     Device Cookies"): a successful login sets an HttpOnly cookie that
//     says "this browser logged in as this name". A login for that name
//     that carries it is counted against that device alone, not against
//     the name or the address, so an attacker who keeps a name waiting
//     (or shares its owner's address) cannot lock the owner out of a
//     browser they used before. A device that fails waits like a name.
//
// An attempt is counted as a failure when it begins and taken back when
// it succeeds, so concurrent guesses cannot slip past the count together.

// deviceCookie is the name of the device cookie.
const deviceCookie = "parley_device"

// DeviceCookieTTL is how long a device cookie vouches for its browser.
const DeviceCookieTTL = 30 * 24 * time.Hour

// limitReasons label parley_http_limited_total.
var limitReasons = []string{"signup", "login_address", "login_name", "login_device"}

// refuse answers 429 rate_limited with Retry-After in whole seconds,
// rounded up, and counts the refusal under reason.
func (h *Handler) refuse(w http.ResponseWriter, reason string, wait time.Duration, format string) error {
	secs := max(1, int64(math.Ceil(wait.Seconds())))
	w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	h.limitedTotal.WithLabelValues(reason).Inc()
	return parley.Errorf(parley.CodeRateLimited, format, secs)
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

// loginAttempt is one login counted against its limits.
type loginAttempt struct {
	addrKey string // the key counted in loginByAddr; "" for none
	nameKey string // the key counted in loginByName (a name or a device); "" for none
}

// beginLogin counts a login for name against its limits, or refuses it
// with rate_limited.
func (h *Handler) beginLogin(w http.ResponseWriter, r *http.Request, name string) (*loginAttempt, error) {
	a := &loginAttempt{}
	if h.loginByName != nil {
		if nonce, ok := h.device(r, name); ok {
			key := "device\x00" + nonce
			if ok, wait := h.loginByName.Attempt(key); !ok {
				return nil, h.refuse(w, "login_device", wait, "too many failed logins from this browser; retry in %d s")
			}
			a.nameKey = key
			return a, nil
		}
	}
	if h.loginByAddr != nil {
		key := addrKey(h.clientAddr(r))
		if ok, wait := h.loginByAddr.Attempt(key); !ok {
			return nil, h.refuse(w, "login_address", wait, "too many failed logins from this address; retry in %d s")
		}
		a.addrKey = key
	}
	if h.loginByName != nil {
		key := "name\x00" + name
		if ok, wait := h.loginByName.Attempt(key); !ok {
			if a.addrKey != "" {
				h.loginByAddr.Undo(a.addrKey) // nothing was checked
			}
			return nil, h.refuse(w, "login_name", wait, "too many failed logins for this name; retry in %d s")
		}
		a.nameKey = key
	}
	return a, nil
}

// endLogin settles an attempt with the login's outcome: a wrong name or
// password stays counted; a success clears the name's (or device's)
// failures and takes back the address's count; any other outcome (the
// store unavailable) checked nothing and is taken back.
func (h *Handler) endLogin(a *loginAttempt, err error) {
	if parley.ErrorCode(err) == parley.CodeUnauthorized {
		return
	}
	if a.addrKey != "" {
		h.loginByAddr.Undo(a.addrKey)
	}
	if a.nameKey != "" {
		if err == nil {
			h.loginByName.Reset(a.nameKey)
		} else {
			h.loginByName.Undo(a.nameKey)
		}
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
