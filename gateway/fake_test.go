package gateway

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sort"
	"sync"
	"time"
	"unicode/utf8"

	"parley"
)

// fakeChat is an in-memory chat service with the semantics the gateway
// relies on: tokens, rooms with members, messages with gapless seqs,
// idempotent client ids, and committed events reported to a sink in commit
// order, as the store's OnCommit does.
type fakeChat struct {
	mu      sync.Mutex
	users   map[string]parley.User       // token -> user
	expires map[string]time.Time         // token -> expiry; 24 h from each check when absent
	members map[string]map[string]bool   // room -> user id -> member
	msgs    map[string][]parley.Message  // room -> messages by seq-1
	keys    map[[3]string]parley.Message // (room, sender, client id) -> message
	sink    parley.EventSink
	apiKeys map[string]*parley.APIKey // token -> its API key (addKey)
	held    chan struct{}             // when not nil, Send signals here and waits for its ctx (a commit that never comes)...
	release chan struct{}             // ...or, when not nil, until it is closed, then commits
	// authHook, when set, is called by AuthenticateToken after it looked
	// the token up, before it answers.
	authHook func(token string)
	// authorizeHook, when set, is called by Authorize before it looks
	// the membership up.
	authorizeHook func(u parley.User, roomID string)
	// owners holds each room's owner (may delete any message); changes
	// the rooms' last change numbers.
	owners  map[string]string
	changes map[string]int64
	// changeKeys holds the changes' idempotency keys, by room, user and
	// key.
	changeKeys map[[3]string]parley.ChangeKey
	// changedHook, when set, is called by Changed before it reads.
	changedHook func(roomID string, after int64)
	// messagesHook, when set, is called by Messages before it reads.
	messagesHook func(roomID string, p parley.Page)
	// rawKeys, set before any session sends, makes Send store a client
	// id that parley.CheckClientID refuses, as a store holding one from
	// before the check; unset, Send refuses it as chat.Service does.
	rawKeys bool
}

func newFakeChat() *fakeChat {
	return &fakeChat{
		users:      map[string]parley.User{},
		expires:    map[string]time.Time{},
		members:    map[string]map[string]bool{},
		msgs:       map[string][]parley.Message{},
		keys:       map[[3]string]parley.Message{},
		owners:     map[string]string{},
		changes:    map[string]int64{},
		changeKeys: map[[3]string]parley.ChangeKey{},
	}
}

// addUser registers a user with token "token-<name>".
func (c *fakeChat) addUser(name string) parley.User {
	c.mu.Lock()
	defer c.mu.Unlock()
	u := parley.User{ID: "u-" + name, Name: name}
	c.users["token-"+name] = u
	return u
}

// addRoom creates a room with the given members.
func (c *fakeChat) addRoom(id string, members ...parley.User) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.members[id] = map[string]bool{}
	for _, u := range members {
		c.members[id][u.ID] = true
	}
}

func (c *fakeChat) leave(roomID string, u parley.User) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.members[roomID], u.ID)
	c.sink([]parley.Event{{Kind: parley.EventLeave, Room: parley.Room{ID: roomID}, UserID: u.ID}})
}

// addToken gives an existing user another token, expiring at expires.
func (c *fakeChat) addToken(u parley.User, token string, expires time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.users[token] = u
	c.expires[token] = expires
}

// revoke makes token unknown, as the store does for a revoked token.
func (c *fakeChat) revoke(token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.users, token)
}

// fakeTokenHash is the fake's hash of a token.
func fakeTokenHash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

func (c *fakeChat) AuthenticateToken(ctx context.Context, token string) (parley.User, parley.Token, error) {
	c.mu.Lock()
	u, ok := c.users[token]
	expires, set := c.expires[token]
	hook := c.authHook
	c.mu.Unlock()
	if hook != nil {
		hook(token)
	}
	if !ok {
		return parley.User{}, parley.Token{}, parley.Errorf(parley.CodeUnauthorized, "unknown token")
	}
	if !set {
		expires = time.Now().Add(24 * time.Hour)
	}
	t := parley.Token{Hash: fakeTokenHash(token), UserID: u.ID, ExpiresAt: expires}
	c.mu.Lock()
	t.Key = c.apiKeys[token]
	c.mu.Unlock()
	return u, t, nil
}

// addKey makes a bot whose token "token-<name>" is an API key with scopes.
func (c *fakeChat) addKey(name string, scopes ...string) parley.User {
	u := c.addUser(name)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.apiKeys == nil {
		c.apiKeys = map[string]*parley.APIKey{}
	}
	c.apiKeys["token-"+name] = &parley.APIKey{Name: name, UserID: u.ID, Scopes: scopes}
	return u
}

func (c *fakeChat) Authorize(ctx context.Context, u parley.User, roomID string) (parley.Member, error) {
	c.mu.Lock()
	hook := c.authorizeHook
	c.mu.Unlock()
	if hook != nil {
		hook(u, roomID)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.authorizeLocked(u, roomID)
}

func (c *fakeChat) authorizeLocked(u parley.User, roomID string) (parley.Member, error) {
	m, ok := c.members[roomID]
	if !ok {
		return parley.Member{}, parley.Errorf(parley.CodeNotFound, "room not found")
	}
	if !m[u.ID] {
		return parley.Member{}, parley.Errorf(parley.CodeForbidden, "not a member of this room")
	}
	return parley.Member{RoomID: roomID, UserID: u.ID}, nil
}

func (c *fakeChat) Send(ctx context.Context, u parley.User, roomID, body, clientID string) (parley.Message, bool, error) {
	if body == "" || !utf8.ValidString(body) {
		return parley.Message{}, false, parley.Errorf(parley.CodeInvalid, "bad body")
	}
	if len(body) > c.MaxBody() {
		return parley.Message{}, false, parley.Errorf(parley.CodeTooLarge, "body too large")
	}
	if err := parley.CheckClientID(clientID); err != nil && !c.rawKeys { // as chat.Service
		return parley.Message{}, false, err
	}
	c.mu.Lock()
	held, release := c.held, c.release
	c.mu.Unlock()
	if held != nil {
		held <- struct{}{}
		select {
		case <-release: // never when nil
		case <-ctx.Done():
			return parley.Message{}, false, fmt.Errorf("send: %w", ctx.Err())
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.authorizeLocked(u, roomID); err != nil {
		return parley.Message{}, false, err
	}
	key := [3]string{roomID, u.ID, clientID}
	if m, ok := c.keys[key]; ok && clientID != "" {
		return m, false, nil
	}
	m := parley.Message{
		ID: parley.NewID(), RoomID: roomID, Seq: int64(len(c.msgs[roomID]) + 1),
		SenderID: u.ID, SenderName: u.Name, Body: body, ClientID: clientID, SentAt: parley.Now(),
	}
	c.msgs[roomID] = append(c.msgs[roomID], m)
	if clientID != "" {
		c.keys[key] = m
	}
	c.sink([]parley.Event{{Kind: parley.EventMessage, Room: parley.Room{ID: roomID, LastSeq: m.Seq}, UserID: u.ID, Message: m}})
	return m, true, nil
}

func (c *fakeChat) Messages(ctx context.Context, u parley.User, roomID string, p parley.Page) ([]parley.Message, error) {
	c.mu.Lock()
	hook := c.messagesHook
	c.mu.Unlock()
	if hook != nil {
		hook(roomID, p)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.authorizeLocked(u, roomID); err != nil {
		return nil, err
	}
	var page []parley.Message
	if !p.Forward() { // newest first, below Before (the newest when 0)
		msgs := c.msgs[roomID]
		for i := len(msgs) - 1; i >= 0 && len(page) < p.Limit; i-- {
			if p.Before == 0 || msgs[i].Seq < p.Before {
				page = append(page, msgs[i])
			}
		}
		return page, nil
	}
	for _, m := range c.msgs[roomID] {
		if m.Seq > p.After && len(page) < p.Limit {
			page = append(page, m)
		}
	}
	return page, nil
}

func (c *fakeChat) MaxBody() int { return 4096 }

// Members serves the hub.
func (c *fakeChat) Members(ctx context.Context, roomID string) ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ids []string
	for id := range c.members[roomID] {
		ids = append(ids, id)
	}
	return ids, nil
}

func (c *fakeChat) Room(ctx context.Context, u parley.User, roomID string) (parley.Room, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.members[roomID]; !ok {
		return parley.Room{}, parley.Errorf(parley.CodeNotFound, "room not found")
	}
	return parley.Room{ID: roomID, LastSeq: int64(len(c.msgs[roomID])), LastChange: c.changes[roomID]}, nil
}

// changeLocked finds message seq of a room for a change by u.
func (c *fakeChat) changeLocked(u parley.User, roomID string, seq int64) (*parley.Message, error) {
	if _, err := c.authorizeLocked(u, roomID); err != nil {
		return nil, err
	}
	if seq < 1 || seq > int64(len(c.msgs[roomID])) {
		return nil, parley.Errorf(parley.CodeNotFound, "no message %d", seq)
	}
	return &c.msgs[roomID][seq-1], nil
}

// repeatLocked answers a change whose key is kept (ok): the key's message
// as it is now, or the conflict of a reused key.
func (c *fakeChat) repeatLocked(u parley.User, roomID string, seq int64, deletion bool, body, clientID string) (parley.Message, bool, error) {
	k, ok := c.changeKeys[[3]string{roomID, u.ID, clientID}]
	if clientID == "" || !ok {
		return parley.Message{}, false, nil
	}
	if _, err := c.authorizeLocked(u, roomID); err != nil {
		return parley.Message{}, true, err
	}
	m := c.msgs[roomID][k.Seq-1]
	return m, true, k.Repeat(clientID, seq, deletion, body, &m)
}

func (c *fakeChat) putKeyLocked(u parley.User, roomID, clientID string, k parley.ChangeKey) {
	if clientID != "" {
		c.changeKeys[[3]string{roomID, u.ID, clientID}] = k
	}
}

func (c *fakeChat) EditMessage(ctx context.Context, u parley.User, roomID string, seq int64, body, clientID string) (parley.Message, error) {
	if body == "" || !utf8.ValidString(body) {
		return parley.Message{}, parley.Errorf(parley.CodeInvalid, "bad body")
	}
	if err := parley.CheckClientID(clientID); err != nil { // as chat.Service
		return parley.Message{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok, err := c.repeatLocked(u, roomID, seq, false, body, clientID); ok {
		return m, err
	}
	m, err := c.changeLocked(u, roomID, seq)
	if err != nil {
		return parley.Message{}, err
	}
	switch {
	case m.SenderID != u.ID:
		return parley.Message{}, parley.Errorf(parley.CodeForbidden, "only its sender may edit a message")
	case m.Deleted():
		return parley.Message{}, parley.Errorf(parley.CodeConflict, "the message is deleted")
	}
	c.changes[roomID]++
	now := parley.Now()
	m.Body, m.EditedAt, m.Change = body, &now, c.changes[roomID]
	c.putKeyLocked(u, roomID, clientID, parley.ChangeKey{Seq: seq, Change: m.Change})
	c.sink([]parley.Event{{Kind: parley.EventEdited, Room: parley.Room{ID: roomID, LastChange: m.Change}, UserID: u.ID, Message: *m}})
	return *m, nil
}

func (c *fakeChat) DeleteMessage(ctx context.Context, u parley.User, roomID string, seq int64, clientID string) (parley.Message, error) {
	if err := parley.CheckClientID(clientID); err != nil { // as chat.Service
		return parley.Message{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok, err := c.repeatLocked(u, roomID, seq, true, "", clientID); ok {
		return m, err
	}
	m, err := c.changeLocked(u, roomID, seq)
	if err != nil {
		return parley.Message{}, err
	}
	if m.SenderID != u.ID && c.owners[roomID] != u.ID {
		return parley.Message{}, parley.Errorf(parley.CodeForbidden, "only its sender or a moderator may delete a message")
	}
	if m.Deleted() {
		return *m, nil
	}
	c.changes[roomID]++
	now := parley.Now()
	m.Body, m.DeletedAt, m.Change = "", &now, c.changes[roomID]
	c.putKeyLocked(u, roomID, clientID, parley.ChangeKey{Seq: seq, Deleted: true, Change: m.Change})
	c.sink([]parley.Event{{Kind: parley.EventDeleted, Room: parley.Room{ID: roomID, LastChange: m.Change}, UserID: u.ID, Message: *m}})
	return *m, nil
}

func (c *fakeChat) Changed(ctx context.Context, u parley.User, roomID string, after int64, limit int) ([]parley.Message, error) {
	c.mu.Lock()
	hook := c.changedHook
	c.mu.Unlock()
	if hook != nil {
		hook(roomID, after)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.authorizeLocked(u, roomID); err != nil {
		return nil, err
	}
	var out []parley.Message
	for _, m := range c.msgs[roomID] {
		if m.Change > after {
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Change < out[j].Change })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// React: the fake has no reactions (cmd/parley's TestStompReactions runs
// them over the real store).
func (c *fakeChat) React(ctx context.Context, u parley.User, roomID string, seq int64, emoji string, add bool) (parley.Message, bool, error) {
	return parley.Message{}, false, parley.Errorf(parley.CodeInvalid, "fake: no reactions")
}

// SendReply: the fake sends a message that is no reply as Send does, and
// has no replies (cmd/parley's TestReplies runs them over the real store).
func (c *fakeChat) SendReply(ctx context.Context, u parley.User, roomID, body, clientID string, replyTo int64) (parley.Message, bool, error) {
	if replyTo != 0 {
		return parley.Message{}, false, parley.Errorf(parley.CodeInvalid, "fake: no replies")
	}
	return c.Send(ctx, u, roomID, body, clientID)
}

// PinMessage: the fake has no pins (cmd/parley's TestStompPins runs them
// over the real store).
func (c *fakeChat) PinMessage(ctx context.Context, u parley.User, roomID string, seq int64, pin bool) (parley.Message, bool, error) {
	return parley.Message{}, false, parley.Errorf(parley.CodeInvalid, "fake: no pins")
}
