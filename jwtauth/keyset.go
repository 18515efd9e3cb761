package jwtauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/prometheus/client_golang/prometheus"
)

// keySet is the provider's key set, fetched from Config.JWKSURL: the last
// set that parsed is kept while later fetches fail, so that a JWKS that is
// down or returns garbage stops only tokens signed with a key it has not
// served before.
type keySet struct {
	cfg    *Config
	client *http.Client
	cur    atomic.Pointer[keys]  // the last good set; nil before the first
	failed atomic.Pointer[error] // the last fetch's failure; nil when it succeeded

	// sem lets one fetch run at a time; whoever holds it owns lastRefetch.
	sem         chan struct{}
	lastRefetch time.Time // the last fetch an unknown key id caused

	fetches *prometheus.CounterVec // by result: ok, error

	ctx    context.Context // cancelled by close
	cancel context.CancelFunc
	done   chan struct{} // closed when run returns
}

// keys is one fetched set, never changed once stored.
type keys struct {
	keys []jose.JSONWebKey // public signing keys only
}

func newKeySet(cfg *Config) *keySet {
	if cfg.RefreshEvery <= 0 {
		cfg.RefreshEvery = DefaultRefreshEvery
	}
	if cfg.MinRefetch <= 0 {
		cfg.MinRefetch = DefaultMinRefetch
	}
	if cfg.HTTPTimeout <= 0 {
		cfg.HTTPTimeout = DefaultHTTPTimeout
	}
	client := cfg.HTTPClient
	if client == nil {
		client = &http.Client{Timeout: cfg.HTTPTimeout}
	}
	ks := &keySet{
		cfg: cfg, client: client, sem: make(chan struct{}, 1), done: make(chan struct{}),
		fetches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_jwks_fetches_total",
			Help: "Fetches of the JWT key set (--jwt-jwks-url), by result: ok, error.",
		}, []string{"result"}),
	}
	ks.fetches.WithLabelValues("ok")
	ks.fetches.WithLabelValues("error")
	ks.ctx, ks.cancel = context.WithCancel(context.Background())
	return ks
}

// start fetches the set once, then refreshes it on its own goroutine
// until close.
func (ks *keySet) start() {
	ks.refresh()
	go ks.run()
}

func (ks *keySet) run() {
	defer close(ks.done)
	tick := ks.cfg.Tick
	if tick == nil {
		t := time.NewTicker(ks.cfg.RefreshEvery)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ks.ctx.Done():
			return
		case <-tick:
			ks.refresh()
		}
	}
}

// close stops the refresh and waits for it; a fetch in flight is
// cancelled.
func (ks *keySet) close() {
	ks.cancel()
	<-ks.done
}

// refresh fetches the set, waiting for a fetch in flight to end first.
func (ks *keySet) refresh() {
	select {
	case ks.sem <- struct{}{}:
	case <-ks.ctx.Done():
		return
	}
	defer func() { <-ks.sem }()
	ks.fetch(ks.ctx)
}

// refetch fetches the set for a token whose key seen does not hold,
// unless another fetch replaced seen meanwhile or the last refetch was
// less than Config.MinRefetch ago.
func (ks *keySet) refetch(ctx context.Context, seen *keys) {
	select {
	case ks.sem <- struct{}{}:
	case <-ctx.Done():
		return
	case <-ks.ctx.Done():
		return
	}
	defer func() { <-ks.sem }()
	if ks.cur.Load() != seen {
		return
	}
	now := ks.cfg.Now()
	if !ks.lastRefetch.IsZero() && now.Sub(ks.lastRefetch) < ks.cfg.MinRefetch {
		return
	}
	ks.lastRefetch = now
	ks.fetch(ctx)
}

// fetch gets, parses and stores the set, counting and logging a failure.
func (ks *keySet) fetch(ctx context.Context) {
	set, err := ks.get(ctx)
	if err != nil {
		err = fmt.Errorf("the key set at %s is unavailable: %w", ks.cfg.JWKSURL, err)
		ks.failed.Store(&err)
		ks.fetches.WithLabelValues("error").Inc()
		ks.cfg.Logger.Warn("jwt key set fetch failed", "url", ks.cfg.JWKSURL, "err", err)
		return
	}
	ks.cur.Store(set)
	ks.failed.Store(nil)
	ks.fetches.WithLabelValues("ok").Inc()
}

func (ks *keySet) get(ctx context.Context) (*keys, error) {
	ctx, cancel := context.WithTimeout(ctx, ks.cfg.HTTPTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ks.cfg.JWKSURL, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := ks.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %s", resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKS+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxJWKS {
		return nil, fmt.Errorf("over %d bytes", maxJWKS)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(b, &set); err != nil {
		return nil, fmt.Errorf("not a JSON Web Key Set: %w", err)
	}
	out := &keys{}
	for _, k := range set.Keys {
		if k.Use != "" && k.Use != "sig" {
			continue
		}
		if !k.IsPublic() {
			k = k.Public()
		}
		switch pk := k.Key.(type) {
		case *rsa.PublicKey:
			if pk.N.BitLen() < 2048 {
				continue
			}
		case *ecdsa.PublicKey, ed25519.PublicKey:
		default: // symmetric keys are never taken from a key set
			continue
		}
		out.keys = append(out.keys, k)
	}
	if len(out.keys) == 0 {
		return nil, errors.New("no public signing key in it")
	}
	return out, nil
}

// match returns the keys of set that may have signed a token of alg with
// key id kid (every key of alg's kind when kid is empty).
func (set *keys) match(alg, kid string) []jose.JSONWebKey {
	if set == nil {
		return nil
	}
	var out []jose.JSONWebKey
	for _, k := range set.keys {
		if (kid == "" || k.KeyID == kid) && fits(k, alg) {
			out = append(out, k)
		}
	}
	return out
}

// fits reports whether k is a key of alg's kind (and, when k names its
// own algorithm, of alg).
func fits(k jose.JSONWebKey, alg string) bool {
	if k.Algorithm != "" && k.Algorithm != alg {
		return false
	}
	switch pk := k.Key.(type) {
	case *rsa.PublicKey:
		return alg == RS256
	case *ecdsa.PublicKey:
		return alg == ES256 && pk.Curve == elliptic.P256()
	case ed25519.PublicKey:
		return alg == EdDSA
	}
	return false
}

// verify checks tok's signature with the key of alg and kid, refetching
// the set once (within MinRefetch) when it holds no such key, and decodes
// the claims into dest.
func (ks *keySet) verify(ctx context.Context, tok *jwt.JSONWebToken, alg, kid string, dest ...any) error {
	set := ks.cur.Load()
	cands := set.match(alg, kid)
	if len(cands) == 0 {
		ks.refetch(ctx, set)
		set = ks.cur.Load()
		cands = set.match(alg, kid)
	}
	if len(cands) == 0 {
		if f := ks.failed.Load(); f != nil {
			return &Error{reasonJWKS, (*f).Error()}
		}
		return &Error{reasonUnknownKey, fmt.Sprintf("no %s key with id %q in the key set", alg, kid)}
	}
	var err error
	for _, k := range cands {
		if err = tok.Claims(k.Key, dest...); err == nil {
			return nil
		}
	}
	return err
}
