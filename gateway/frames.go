package gateway

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"parley"
	"parley/stomp"
)

// Destinations (design §4).
const (
	topicPrefix = "/topic/rooms."
	userQueue   = "/user/queue/messages"
	appPrefix   = "/app/rooms."
)

// handle acts on one frame; false ends reading (the session was refused).
// While it acts the session is busy: Shutdown lets the frame finish and
// be answered, then endFrame sends the going-away ERROR.
func (s *session) handle(f *stomp.Frame, rs *readState) bool {
	if f.Command == stomp.Heartbeat {
		return true
	}
	connected, ok := s.beginFrame()
	if !ok {
		// Refused meanwhile (slow consumer, heart-beat, shutdown): frames
		// still in the read buffer must not act, since none of them could
		// be answered (a SEND stored without its RECEIPT).
		return false
	}
	ok = s.handleFrame(f, rs, connected)
	return s.endFrame() && ok
}

// handleFrame is handle once the session is busy with f.
func (s *session) handleFrame(f *stomp.Frame, rs *readState, connected bool) bool {
	var err error
	receipt := f.Get("receipt")
	refused := keyRefusal(s.key, f) // keys.go; nil for a person's session
	switch {
	case f.Command == stomp.Connect || f.Command == stomp.Stomp:
		if connected {
			err = parley.Errorf(parley.CodeInvalid, "already connected")
		} else {
			err = s.connect(f, rs)
			receipt = nil // CONNECTED is the answer
		}
	case !connected:
		err = parley.Errorf(parley.CodeUnauthorized, "the first frame must be CONNECT or STOMP, not %v", f.Command)
	case refused != nil:
		err = refused
	case f.Command == stomp.Subscribe:
		if err = s.subscribe(f); err == nil {
			receipt = nil // subscribe sent it, before any message
		}
	case f.Command == stomp.Unsubscribe:
		err = s.unsubscribe(f)
	case f.Command == stomp.Send && isTypingDest(f.Get("destination")):
		err = s.typing(f) // events.go
	case f.Command == stomp.Send && isPinSend(f):
		var m parley.Message
		if m, err = s.pin(f); err == nil && receipt != nil {
			s.changeReceipt(receipt, &m) // pins.go
			receipt = nil
		}
	case f.Command == stomp.Send && isReactSend(f):
		var m parley.Message
		if m, err = s.react(f); err == nil && receipt != nil {
			s.changeReceipt(receipt, &m) // reactions.go
			receipt = nil
		}
	case f.Command == stomp.Send && isChangeSend(f):
		var m parley.Message
		if m, err = s.change(f); err == nil && receipt != nil {
			s.changeReceipt(receipt, &m) // edits.go
			receipt = nil
		}
	case f.Command == stomp.Send:
		var m parley.Message
		if m, err = s.send(f); err == nil && receipt != nil {
			s.receipt(receipt, &m)
			receipt = nil
		}
	case f.Command == stomp.Ack || f.Command == stomp.Nack:
		err = s.ack(f)
	case f.Command == stomp.Disconnect:
		s.disconnect(receipt)
		return false
	case f.Command == stomp.Begin || f.Command == stomp.Commit || f.Command == stomp.Abort:
		err = parley.Errorf(parley.CodeInvalid, "transactions are not supported")
	default:
		err = parley.Errorf(parley.CodeInvalid, "%v is not a client frame", f.Command)
	}
	if err != nil {
		if errors.Is(err, context.Canceled) && s.srv.ctx.Err() != nil {
			// A CONNECT or SUBSCRIBE check cut short by Shutdown.
			err = goingAway
		}
		s.refuse(err, receipt)
		return false
	}
	if receipt != nil {
		s.receipt(receipt, nil)
	}
	return true
}

// connect authenticates the client and answers CONNECTED.
func (s *session) connect(f *stomp.Frame, rs *readState) error {
	vs, ok := stomp.Negotiate(string(f.Get("accept-version")))
	if !ok {
		return parley.Errorf(parley.CodeInvalid, "no common protocol version: the server speaks %s", stomp.SupportedVersions)
	}
	v, _ := stomp.ParseVersion(vs)
	hb, err := stomp.ParseHeartBeat(string(f.Get("heart-beat")))
	if err != nil {
		return parley.Errorf(parley.CodeInvalid, "%v", err)
	}
	token := string(f.Get("passcode"))
	if auth := f.Get("Authorization"); auth != nil {
		const prefix = "bearer "
		if len(auth) <= len(prefix) || !strings.EqualFold(string(auth[:len(prefix)]), prefix) {
			return parley.Errorf(parley.CodeUnauthorized, "the Authorization header must be \"Bearer <token>\"")
		}
		token = string(auth[len(prefix):])
	}
	ctx, cancel := context.WithTimeout(s.srv.ctx, s.srv.cfg.SendTimeout)
	u, tok, err := s.authenticate(ctx, token)
	s.logAuth(u, err)
	if err == nil && s.srv.cfg.Sessions != nil {
		s.srv.cfg.Sessions.Opened(ctx, u.ID)
	}
	cancel()
	if err != nil {
		return err
	}
	offer := s.srv.cfg.HeartBeat
	if v == stomp.V10 {
		hb, offer = stomp.HeartBeat{}, stomp.HeartBeat{}
	}
	send, recv := stomp.NegotiateHeartBeat(capHeartBeat(hb, s.srv.cfg.MaxHeartBeat), offer)

	var c stomp.Frame
	c.Command = stomp.Connected
	c.Add("version", vs)
	if v >= stomp.V11 {
		c.Add("heart-beat", offer.String())
	}
	c.Add("session", s.id)
	c.Add("server", s.srv.cfg.Server)
	c.Add("user-name", u.Name)
	b := encodeControl(&c, v)

	rs.sr.SetVersion(v)
	s.key = tok.Key
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		// close ran before the session counted as connected: it did not
		// report the end, so report it here, on a goroutine that Shutdown
		// waits for.
		if s.srv.cfg.Sessions != nil {
			s.srv.goClosed(u.ID)
		}
		return nil
	}
	defer s.mu.Unlock()
	s.connected = true
	s.user, s.version = u, v
	s.sendEvery, s.recvEvery = send, recv
	s.expireAtLocked(tok.ExpiresAt)
	if send > 0 || recv > 0 {
		s.timer.Reset(s.tickEveryLocked())
	} else {
		s.timer.Stop()
	}
	s.enqueueLocked(outItem{cmd: stomp.Connected, raw: b}, len(b))
	return nil
}

// authenticate checks the CONNECT's token and registers the session as
// one of its user's (register), checking the token again if a Revoke ran
// meanwhile.
func (s *session) authenticate(ctx context.Context, token string) (parley.User, parley.Token, error) {
	revoked := s.srv.revocationCount()
	u, tok, err := s.srv.chat.AuthenticateToken(ctx, token)
	if err != nil {
		return u, tok, err
	}
	if uc := s.srv.cfg.UserConns; uc != nil {
		if !uc.Acquire(ctx, u.ID, s.id, s.srv.cfg.MaxConnsPerUser) {
			return u, tok, s.srv.overUserLimit()
		}
	}
	recheck, err := s.srv.register(s, u, tok.Hash, revoked)
	if err != nil && s.srv.cfg.UserConns != nil {
		s.srv.cfg.UserConns.Release(u.ID, s.id) // register did not count it: remove will not release it
	}
	if err == nil && recheck {
		_, _, err = s.srv.chat.AuthenticateToken(ctx, token)
	}
	return u, tok, err
}

// capHeartBeat takes each interval of a client's heart-beat above limit as
// limit: the client cannot make the server wait longer than that for it,
// nor ask to hear from the server less often.
func capHeartBeat(hb stomp.HeartBeat, limit time.Duration) stomp.HeartBeat {
	return stomp.HeartBeat{Send: min(hb.Send, limit), Receive: min(hb.Receive, limit)}
}

// subscribe registers a subscription: members only for a room topic, with
// a catch-up from history when since-seq is given.
func (s *session) subscribe(f *stomp.Frame) error {
	dest := string(f.Get("destination"))
	sub, err := s.newSubscription(f, dest)
	if err != nil {
		return err
	}
	since := int64(-1)
	switch {
	case isEventsDest(dest):
		return s.subscribeEvents(f, sub, dest) // events.go
	case strings.HasPrefix(dest, topicPrefix) && len(dest) > len(topicPrefix):
		sub.RoomID = dest[len(topicPrefix):]
		if v, ok := f.Lookup("since-seq"); ok {
			n, err := strconv.ParseInt(string(v), 10, 64)
			if err != nil || n < 0 {
				return parley.Errorf(parley.CodeInvalid, "since-seq must be a seq of 0 or more")
			}
			since = n
		}
	case dest == userQueue:
		sub.user = true
	default:
		return parley.Errorf(parley.CodeNotFound, "no destination %q: subscribe to %s{roomId}, %s{roomId}%s, %s or %s", dest, topicPrefix, topicPrefix, eventsSuffix, userQueue, userEvents)
	}

	// sub is filled in before the table takes it, under s.mu: a close
	// from then on reads it.
	s.mu.Lock()
	u := s.user
	sub.UserID = u.ID
	sub.To = sub
	sub.shape = shapeOf(sub.user, s.version, sub.ack)
	sub.ctx, sub.cancel = context.WithCancel(s.srv.ctx)
	err = s.addSubLocked(sub)
	s.mu.Unlock()
	if err != nil {
		sub.cancel()
		return err
	}

	// Register first, then check membership: a leave committed in between
	// is either seen by the check or drops the registration.
	s.srv.hub.Subscribe(&sub.Sub)
	if s.closedSince() {
		s.srv.hub.Unsubscribe(&sub.Sub)
		sub.stop()
		return errClosed
	}
	if sub.RoomID != "" {
		ctx, cancel := context.WithTimeout(sub.ctx, s.srv.cfg.SendTimeout)
		_, err := s.srv.chat.Authorize(ctx, u, sub.RoomID)
		if err == nil && since > 0 {
			err = s.checkSince(ctx, u, sub.RoomID, since)
		}
		if err == nil && since < 0 {
			s.srv.hub.LiveAfter(&sub.Sub, s.liveFrom(ctx, u, sub.RoomID))
		}
		cancel()
		if err != nil {
			s.dropSub(sub)
			return err
		}
	}
	if r := f.Get("receipt"); r != nil {
		s.receipt(r, nil)
	}
	if since < 0 {
		s.srv.hub.Start(sub.ctx, &sub.Sub, -1, nil, nil)
		return nil
	}
	go s.catchUp(sub, since)
	return nil
}

// newSubscription returns the subscription of a SUBSCRIBE to dest, with
// the frame's id (dest for a STOMP 1.0 frame without one) and ack mode.
func (s *session) newSubscription(f *stomp.Frame, dest string) (*subscription, error) {
	id, ok := f.Lookup("id")
	if !ok {
		if s.readVersion() >= stomp.V11 {
			return nil, parley.Errorf(parley.CodeInvalid, "SUBSCRIBE needs an id header")
		}
		id = []byte(dest) // STOMP 1.0: the id is optional
	}
	sub := &subscription{s: s, id: string(id)}
	switch string(f.Get("ack")) {
	case "", "auto":
	case "client", "client-individual":
		sub.ack = true
	default:
		return nil, parley.Errorf(parley.CodeInvalid, "ack must be auto, client or client-individual")
	}
	return sub, nil
}

// liveFrom returns the room's last seq for a live-only subscription, read
// after the hub registered it and before its RECEIPT: every seq after it
// is live for the subscription. The cluster relay starts a room it has
// never delivered there (hub.Hub.LiveAfter), so that a batch of an older
// seq that is late loses the subscription nothing. -1 when the read
// fails: the subscription still starts, live from whatever comes first.
func (s *session) liveFrom(ctx context.Context, u parley.User, roomID string) int64 {
	r, err := s.srv.chat.Room(ctx, u, roomID)
	if err != nil {
		return -1
	}
	return r.LastSeq
}

// checkSince refuses a since-seq past the room's last seq: the client
// claims messages that do not exist (a seq of another room, or from before
// a restore), and resuming after it would silently skip the messages that
// take those seqs later.
func (s *session) checkSince(ctx context.Context, u parley.User, roomID string, since int64) error {
	newest, err := s.srv.chat.Messages(ctx, u, roomID, parley.Newest(1))
	if err != nil {
		return err
	}
	var last int64
	if len(newest) > 0 {
		last = newest[0].Seq
	}
	if since > last {
		return parley.Errorf(parley.CodeInvalid, "since-seq %d is past the room's last seq %d", since, last)
	}
	return nil
}

// addSubLocked adds sub to the session's table.
func (s *session) addSubLocked(sub *subscription) error {
	if s.dead {
		return errClosed
	}
	live := s.subs[:0]
	for _, o := range s.subs {
		if !o.Removed() {
			live = append(live, o)
		}
	}
	clear(s.subs[len(live):])
	s.subs = live
	for _, o := range s.subs {
		if o.id == sub.id {
			return parley.Errorf(parley.CodeInvalid, "subscription id %q is in use", sub.id)
		}
	}
	if len(s.subs) >= s.srv.cfg.MaxSubscriptions {
		return parley.Errorf(parley.CodeInvalid, "over %d subscriptions", s.srv.cfg.MaxSubscriptions)
	}
	s.subs = append(s.subs, sub)
	return nil
}

// closedSince reports whether the session was closed since addSubLocked
// took a subscription that the caller has registered since: close
// unregistered the session's subscriptions before this one was, so the
// caller must drop the registration. (A close after this check finds the
// subscription in the table and drops it itself.)
func (s *session) closedSince() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// dropSub removes sub from the session and the hub.
func (s *session) dropSub(sub *subscription) {
	s.mu.Lock()
	for i, o := range s.subs {
		if o == sub {
			s.subs = append(s.subs[:i], s.subs[i+1:]...)
			break
		}
	}
	s.mu.Unlock()
	s.srv.hub.Unsubscribe(&sub.Sub)
	sub.stop()
	s.room.Broadcast()
}

// catchUp sends a resuming subscription its history, then makes it live.
func (s *session) catchUp(sub *subscription, since int64) {
	u := s.readUser()
	history := func(ctx context.Context, after int64) ([]parley.Message, error) {
		ctx, cancel := context.WithTimeout(ctx, s.srv.cfg.SendTimeout)
		defer cancel()
		return s.srv.chat.Messages(ctx, u, sub.RoomID, parley.Page{After: after, Limit: parley.MaxPageLimit})
	}
	err := s.srv.hub.Start(sub.ctx, &sub.Sub, since, history, sub.deliverWait)
	// A subscription the hub dropped meanwhile (its user left the room,
	// was removed, or it lagged) has been dealt with: the hub told it
	// (Evicted, Lagged) or a plain leave needs no word. Whatever the
	// catch-up failed with then (the drop itself, or a history read the
	// user may no longer make) is not the session's fault.
	if err != nil && sub.ctx.Err() == nil && !sub.Removed() {
		s.refuse(err, nil)
	}
}

func (s *session) readUser() parley.User {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.user
}

// unsubscribe drops a subscription; an unknown id is not an error (the hub
// may have dropped it when the user left the room).
func (s *session) unsubscribe(f *stomp.Frame) error {
	id, ok := f.Lookup("id")
	if !ok {
		if s.readVersion() >= stomp.V11 {
			return parley.Errorf(parley.CodeInvalid, "UNSUBSCRIBE needs an id header")
		}
		if id, ok = f.Lookup("destination"); !ok {
			return parley.Errorf(parley.CodeInvalid, "UNSUBSCRIBE needs an id or destination header")
		}
	}
	var found *subscription
	s.mu.Lock()
	for _, sub := range s.subs {
		if sub.id == string(id) {
			found = sub
			break
		}
	}
	s.mu.Unlock()
	if found != nil {
		s.dropSub(found)
	}
	return nil
}

// send stores a message through the chat service; it returns once the
// message is committed.
func (s *session) send(f *stomp.Frame) (parley.Message, error) {
	dest := f.Get("destination")
	if !bytes.HasPrefix(dest, []byte(appPrefix)) || len(dest) == len(appPrefix) {
		return parley.Message{}, parley.Errorf(parley.CodeNotFound, "no destination %q: send to %s{roomId}", dest, appPrefix)
	}
	if _, ok := f.Lookup("transaction"); ok {
		return parley.Message{}, parley.Errorf(parley.CodeInvalid, "transactions are not supported")
	}
	clientID := string(f.Get("client-id")) // one copy, checked and stored by Send
	u := s.readUser()
	if allowed, _ := s.srv.sendLimit.Allow(u.ID); !allowed {
		return parley.Message{}, parley.Errorf(parley.CodeRateLimited, "over %g messages a second", s.srv.cfg.SendRate)
	}
	// Not under srv.ctx: a send in flight when Shutdown begins may finish
	// and get its RECEIPT; only Shutdown's own deadline (abortSends) or
	// SendTimeout cuts it short.
	ctx, cancel := context.WithTimeout(s.srv.sendCtx, s.srv.cfg.SendTimeout)
	defer cancel()
	var replyTo int64
	if v, ok := f.Lookup("reply-to"); ok {
		n, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil || n < 1 {
			return parley.Message{}, parley.Errorf(parley.CodeInvalid, "reply-to must be a seq of 1 or more")
		}
		replyTo = n
	}
	var m parley.Message
	var err error
	if ids, ok := f.Lookup("files"); ok && len(ids) > 0 {
		m, err = s.sendFiles(ctx, u, string(dest[len(appPrefix):]), string(f.Body), clientID, replyTo, string(ids))
	} else {
		m, _, err = s.srv.chat.SendReply(ctx, u, string(dest[len(appPrefix):]), string(f.Body), clientID, replyTo)
	}
	switch {
	case err == nil:
	case errors.Is(err, context.DeadlineExceeded):
		err = parley.Errorf(parley.CodeUnavailable, "the message was not committed within %v", s.srv.cfg.SendTimeout)
	case errors.Is(err, context.Canceled): // Shutdown's ctx ended (abortSends)
		err = parley.Errorf(parley.CodeUnavailable, "the server is shutting down; send again with the same client-id")
	}
	return m, err
}

// ack accepts ACK and NACK per the protocol version. Every message is
// durable in the room's history before it is delivered, so there is
// nothing to redeliver: a NACKed message can be read again with since-seq.
func (s *session) ack(f *stomp.Frame) error {
	var need []string
	switch s.readVersion() {
	case stomp.V12:
		need = []string{"id"}
	case stomp.V11:
		need = []string{"message-id", "subscription"}
	default:
		need = []string{"message-id"}
	}
	for _, h := range need {
		if _, ok := f.Lookup(h); !ok {
			return parley.Errorf(parley.CodeInvalid, "%v needs a %s header", f.Command, h)
		}
	}
	return nil
}

// disconnect answers a receipted DISCONNECT and closes once it is written.
func (s *session) disconnect(receipt []byte) {
	s.stopReading()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setReasonLocked("client sent DISCONNECT")
	if receipt == nil {
		s.finishLocked(outItem{}, wsNormalClosure)
		return
	}
	var r stomp.Frame
	r.Command = stomp.Receipt
	r.AddBytes("receipt-id", receipt)
	s.finishLocked(outItem{cmd: stomp.Receipt, raw: encodeControl(&r, s.version)}, wsNormalClosure)
}

// receipt queues a RECEIPT; for a SEND it also carries the message's seq
// and id.
func (s *session) receipt(id []byte, m *parley.Message) {
	var r stomp.Frame
	r.Command = stomp.Receipt
	r.AddBytes("receipt-id", id)
	if m != nil {
		r.AddInt("seq", m.Seq)
		r.Add("message-id", m.ID)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b := encodeControl(&r, s.version)
	s.enqueueLocked(outItem{cmd: stomp.Receipt, raw: b}, len(b))
}

// pong answers a WebSocket ping.
func (s *session) pong(payload []byte) {
	b := make([]byte, 0, len(payload)+2)
	b = append(b, 0x8a, byte(len(payload)))
	b = append(b, payload...)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.enqueueLocked(outItem{wsRaw: true, raw: b}, len(b))
}

// closeWebSocket answers a client's close frame with the same status code,
// then closes.
func (s *session) closeWebSocket(payload []byte) {
	b := []byte{0x88, 0}
	if len(payload) >= 2 {
		b = append(b[:1], 2, payload[0], payload[1])
	}
	s.stopReading()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finishLocked(outItem{wsRaw: true, raw: b}, 0) // b is the Close frame
}
