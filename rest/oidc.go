package rest

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"parley"
	"parley/oidcauth"

	"github.com/prometheus/client_golang/prometheus"
)

// OpenID Connect sign-in (docs/api.md, "Signing in with OpenID Connect"):
// the browser goes to GET /api/auth/oidc/start, which keeps the signed
// state in a cookie and sends it to the provider; the provider sends it
// back to GET /api/auth/oidc/callback, which checks it, signs the user in
// and keeps the new token in a second cookie, only for POST
// /api/auth/oidc/session, which the web client calls to take it. No node
// keeps anything between the steps, so any node may serve any of them.

// OIDCProvider is the relying party (*oidcauth.RP implements it).
type OIDCProvider interface {
	// Begin returns the provider's authorization URL and the signed state
	// to keep until the callback; an *oidcauth.Error when the provider
	// cannot be reached.
	Begin(ctx context.Context) (authURL, state string, err error)
	// Finish checks a callback and returns the identity it proves, or an
	// *oidcauth.Error.
	Finish(ctx context.Context, query url.Values, state string) (oidcauth.Identity, error)
	// StateTTL is the life of a state.
	StateTTL() time.Duration
}

// ExternalLogin signs an outside identity in (*chat.Service implements
// it): LoginExternal provisions the account on first sight and returns a
// new access token.
type ExternalLogin interface {
	LoginExternal(ctx context.Context, issuer, subject, name string, admit func() error) (string, parley.User, error)
}

// OIDC configures OpenID Connect sign-in.
type OIDC struct {
	Provider OIDCProvider  // required
	Login    ExternalLogin // required
	// Name is the provider's name for the web client's button ("Sign in
	// with Name").
	Name string
	// Secure marks the cookies Secure (the redirect URL is https).
	Secure bool
	// Home is where the browser lands after the callback, with a fragment
	// (#oidc, or #oidc-error=message). Default "/".
	Home string
}

// The cookies of a sign-in: the state, sent to the callback only, and
// the token, sent to the session route only.
const (
	oidcStateCookie   = "parley_oidc_state"
	oidcSessionCookie = "parley_oidc_session"
	oidcCallbackPath  = "/api/auth/oidc/callback"
	oidcSessionPath   = "/api/auth/oidc/session"
	// oidcSessionTTL is how long the token cookie waits for the web
	// client to take it.
	oidcSessionTTL = time.Minute
)

// oidcResults are the labels of parley_oidc_logins_total besides
// oidcauth.Reasons: ok, and account (the identity was proven but no
// account could be made or used).
var oidcResults = append([]string{"ok", "account"}, oidcauth.Reasons...)

func (h *Handler) oidcRoutes() {
	h.handle("GET /api/auth/oidc/start", h.oidcStart)
	h.handle("GET "+oidcCallbackPath, h.oidcCallback)
	h.handle("POST "+oidcSessionPath, h.oidcSession)
}

func newOIDCCounter() *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "parley_oidc_logins_total",
		Help: "OpenID Connect sign-ins by result: ok, or why one was refused (denied by the provider, no_state, bad_state, expired, provider unreachable or refusing the code, invalid_token, account).",
	}, []string{"result"})
	for _, r := range oidcResults {
		c.WithLabelValues(r)
	}
	return c
}

func (h *Handler) oidcOff() error {
	return parley.Errorf(parley.CodeNotFound, "OpenID Connect sign-in is not configured on this server")
}

// oidcStart sends the browser to the provider, its state in a cookie.
func (h *Handler) oidcStart(w http.ResponseWriter, r *http.Request) error {
	o := h.oidc
	if o == nil {
		return h.oidcOff()
	}
	authURL, state, err := o.Provider.Begin(r.Context())
	if err != nil {
		h.oidcRefused(w, r, err)
		return nil
	}
	http.SetCookie(w, &http.Cookie{
		Name: oidcStateCookie, Value: state, Path: oidcCallbackPath, MaxAge: int(o.Provider.StateTTL() / time.Second),
		HttpOnly: true, Secure: o.Secure, SameSite: http.SameSiteLaxMode, // Lax: sent on the provider's redirect back
	})
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, authURL, http.StatusFound)
	return nil
}

// oidcCallback finishes a sign-in: the state cookie is spent whatever
// the outcome; the token goes into the session cookie.
func (h *Handler) oidcCallback(w http.ResponseWriter, r *http.Request) error {
	o := h.oidc
	if o == nil {
		return h.oidcOff()
	}
	var state string
	if c, err := r.Cookie(oidcStateCookie); err == nil {
		state = c.Value
	}
	id, err := o.Provider.Finish(r.Context(), r.URL.Query(), state)
	// The state is spent once the callback is this browser's sign-in's;
	// a callback with another state (a forged link) leaves it be.
	var oe *oidcauth.Error
	if !errors.As(err, &oe) || oe.Reason != oidcauth.ReasonBadState && oe.Reason != oidcauth.ReasonNoState {
		http.SetCookie(w, &http.Cookie{Name: oidcStateCookie, Path: oidcCallbackPath, MaxAge: -1, HttpOnly: true, Secure: o.Secure, SameSite: http.SameSiteLaxMode})
	}
	if err != nil {
		h.oidcRefused(w, r, err)
		return nil
	}
	// A first sight makes an account: it takes the address's sign-up
	// budget, as POST /api/users does.
	admit := func() error { return h.allowSignup(w, r) }
	token, u, err := o.Login.LoginExternal(r.Context(), id.Issuer, id.Subject, id.Name, admit)
	if err != nil {
		h.oidcRefused(w, r, &oidcauth.Error{Reason: "account", Message: "cannot sign you in: " + parley.ErrorMessage(err), Err: err})
		return nil
	}
	h.oidcLogins.WithLabelValues("ok").Inc()
	slog.Info("oidc sign-in", "user_id", u.ID, "user", u.Name)
	http.SetCookie(w, &http.Cookie{
		Name: oidcSessionCookie, Value: token, Path: oidcSessionPath, MaxAge: int(oidcSessionTTL / time.Second),
		HttpOnly: true, Secure: o.Secure, SameSite: http.SameSiteStrictMode,
	})
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, o.home()+"#oidc", http.StatusSeeOther)
	return nil
}

// oidcSession hands the web client the token of the sign-in it just
// finished, once: the cookie is spent.
func (h *Handler) oidcSession(w http.ResponseWriter, r *http.Request) error {
	o := h.oidc
	if o == nil {
		return h.oidcOff()
	}
	c, err := r.Cookie(oidcSessionCookie)
	if err != nil || c.Value == "" {
		return parley.Errorf(parley.CodeUnauthorized, "no OpenID Connect sign-in to finish in this browser: sign in again")
	}
	http.SetCookie(w, &http.Cookie{Name: oidcSessionCookie, Path: oidcSessionPath, MaxAge: -1, HttpOnly: true, Secure: o.Secure, SameSite: http.SameSiteStrictMode})
	u, err := h.chat.Authenticate(r.Context(), c.Value)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, struct {
		Token string      `json:"token"`
		User  parley.User `json:"user"`
	}{c.Value, u})
}

// oidcRefused logs and counts a failed sign-in and sends the browser
// home with the reason in the fragment, for the web client to show.
func (h *Handler) oidcRefused(w http.ResponseWriter, r *http.Request, err error) {
	reason, msg := oidcauth.ReasonProvider, "the sign-in failed"
	var oe *oidcauth.Error
	if errors.As(err, &oe) {
		reason, msg = oe.Reason, oe.Message
	}
	h.oidcLogins.WithLabelValues(reason).Inc()
	slog.Warn("oidc sign-in refused", "path", r.URL.Path, "reason", reason, "err", err)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, h.oidc.home()+"#oidc-error="+url.QueryEscape(msg), http.StatusSeeOther)
}

func (o *OIDC) home() string {
	if o.Home == "" {
		return "/"
	}
	return o.Home
}

// passwordsOff refuses sign-up and password login when they are turned
// off (Config.NoPasswords).
func (h *Handler) passwordsOff() error {
	if !h.noPasswords {
		return nil
	}
	msg := "password sign-in is turned off on this server"
	if h.oidc != nil {
		msg += ": sign in with " + h.oidc.Name
	}
	return parley.Errorf(parley.CodeForbidden, "%s", msg)
}
