package gateway

import (
	"bytes"
	"time"

	"parley"
)

// The sessions of each user: Revoke ends those a revoked token opened, a
// token that expires ends its own session (expire), and a user has at most
// MaxConnsPerUser of them (register), on this node and, with
// Config.UserConns, over the cluster (authenticate).

// errRevoked and errExpired are the refusals of sessions whose token
// stopped working while they were open.
var (
	errRevoked = parley.Errorf(parley.CodeUnauthorized, "the access token was revoked")
	errExpired = parley.Errorf(parley.CodeUnauthorized, "access token expired")
)

// errNodeFull refuses a connection over the node's MaxConns.
var errNodeFull = parley.Errorf(parley.CodeUnavailable, "the server has too many connections: try again later")

// Revoke ends with STOMP ERROR code unauthorized every live session of
// userID opened with the token whose hash is tokenHash; tokenHash nil:
// every session of that user. Call it once the revocation is stored, so
// that a CONNECT racing with it is refused by the store (a CONNECT
// authenticated before Revoke and registered after it checks its token
// again). It returns without waiting for the sessions to close.
func (srv *Server) Revoke(userID string, tokenHash []byte) {
	srv.mu.Lock()
	srv.revocations++
	var ended []*session
	for s, h := range srv.users[userID] {
		if tokenHash == nil || bytes.Equal(h, tokenHash) {
			ended = append(ended, s)
		}
	}
	srv.mu.Unlock()
	for _, s := range ended {
		s.refuse(errRevoked, nil)
	}
}

// revocationCount is the number of Revoke calls so far; CONNECT reads it
// before it authenticates.
func (srv *Server) revocationCount() uint64 {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return srv.revocations
}

// register records s as a session of u opened with the token whose hash is
// tokenHash. It reports whether a Revoke ran since CONNECT read revoked
// (revocationCount), in which case the caller authenticates again: the
// token may have been revoked between its check and now. It fails for a
// session closed meanwhile.
func (srv *Server) register(s *session, u parley.User, tokenHash []byte, revoked uint64) (recheck bool, err error) {
	first := false
	defer func() {
		if first && srv.cfg.OnPresence != nil {
			srv.cfg.OnPresence(u.ID) // after the unlock below
		}
	}()
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if _, ok := srv.sessions[s]; !ok {
		return false, errClosed
	}
	m := srv.users[u.ID]
	if len(m) >= srv.cfg.MaxConnsPerUser {
		return false, srv.overUserLimit()
	}
	if m == nil {
		m = map[*session][]byte{}
		srv.users[u.ID] = m
		first = true
	}
	m[s] = tokenHash
	s.regUser = u.ID
	return srv.revocations != revoked, nil
}

// overUserLimit counts and returns the refusal of a connection over
// MaxConnsPerUser, on this node (register) or over the cluster
// (Config.UserConns).
func (srv *Server) overUserLimit() error {
	srv.m.connRefusals[refusedUserLimit].Inc()
	return parley.Errorf(parley.CodeRateLimited, "over %d connections for this user: close one first", srv.cfg.MaxConnsPerUser)
}

// unregisterLocked forgets s's entry in users, if it has one, and reports
// whether it was its user's last session (then noted in lastSeen).
func (srv *Server) unregisterLocked(s *session) (user string, last bool) {
	if s.regUser == "" {
		return "", false
	}
	user = s.regUser
	m := srv.users[user]
	delete(m, s)
	if len(m) == 0 {
		delete(srv.users, user)
		srv.lastSeen[user] = parley.Now()
		last = true
	}
	s.regUser = ""
	return user, last
}

// expireAtLocked arranges for the session to end when its token expires
// at t (never when t is zero).
func (s *session) expireAtLocked(t time.Time) {
	if t.IsZero() {
		return
	}
	s.stopExpiry = s.srv.afterFunc(t.Sub(s.srv.now()), s.expire)
}

// expire ends a session whose token has expired.
func (s *session) expire() {
	s.refuse(errExpired, nil)
}
