package gateway

import (
	"log/slog"
	"time"

	"parley"
)

// The lifecycle log of a session: one line when it opens, one for its
// authentication (ok or failed), one when it closes (with the reason and
// the duration), each with the session id, which the client also gets in
// CONNECTED's session header. Refusals are logged at debug level with
// their code. No line carries a token or a frame's body.

// logOpen logs the session's start.
func (s *session) logOpen() {
	transport := "tcp"
	if s.websocket {
		transport = "websocket"
	}
	s.srv.log.Info("stomp open", "session", s.id, "transport", transport, "remote", s.conn.RemoteAddr().String())
}

// logAuth logs the outcome of the session's CONNECT.
func (s *session) logAuth(u parley.User, err error) {
	if err != nil {
		s.srv.log.Info("stomp auth failed", "session", s.id, "code", parley.ErrorCode(err))
		return
	}
	s.srv.log.Info("stomp auth ok", "session", s.id, "user", u.Name, "user_id", u.ID)
}

// setReasonLocked records why the session ends, unless a reason is
// recorded already: the first cause wins (a refusal, then the close that
// follows it).
func (s *session) setReasonLocked(reason string) {
	if s.reason == "" {
		s.reason = reason
	}
}

// setReason is setReasonLocked for a caller without s.mu.
func (s *session) setReason(reason string) {
	s.mu.Lock()
	s.setReasonLocked(reason)
	s.mu.Unlock()
}

// logRefusal logs a refusal at debug level, with its code.
func (s *session) logRefusal(err error) {
	if s.srv.log.Enabled(s.srv.ctx, slog.LevelDebug) {
		s.srv.log.Debug("stomp refusal", "session", s.id, "code", parley.ErrorCode(err), "message", parley.ErrorMessage(err))
	}
}

// logClosed logs the session's end.
func (s *session) logClosed(user parley.User, reason string) {
	if reason == "" {
		reason = "connection ended"
	}
	args := []any{"session", s.id, "reason", reason, "duration", time.Since(s.opened).Round(time.Millisecond).String()}
	if user.ID != "" {
		args = append(args, "user", user.Name)
	}
	s.srv.log.Info("stomp closed", args...)
}
