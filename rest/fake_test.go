package rest_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"slices"
	"sync"
	"unicode/utf8"

	"parley"
	"parley/chat"
	"parley/rest"
)

// fakeChat is an in-memory rest.Chat with the answers the REST tests rely
// on: users with passwords, access tokens, group and direct rooms with
// members, messages with gapless seqs and idempotent client ids. Like
// chat.Service it answers a wrong password and an unknown name alike, and
// a direct room of others like an unknown room, word for word.
type fakeChat struct {
	mu       sync.Mutex
	users    map[string]fakeUser          // by name
	tokens   map[string]parley.User       // access token -> owner
	rooms    map[string]*fakeRoom         // by id
	direct   map[string]string            // DirectKey -> room id
	keys     map[[3]string]parley.Message // (room, sender, client id) -> message
	readSeqs map[[2]string]int64          // (room, user) -> read position
	apiKeys  map[string]parley.Token      // API key token -> its Token (Key set)
}

type fakeUser struct {
	user     parley.User
	password string
}

type fakeRoom struct {
	room    parley.Room
	members []string // user ids, in join order
	msgs    []parley.Message
	roles   map[string]string           // user id -> role other than member (fake_people_test.go)
	bans    map[string]parley.Ban       // by user id
	keys    map[string]parley.ChangeKey // by user id + "\x00" + client_id (edits_test.go)
}

var _ rest.Chat = (*fakeChat)(nil)

func newFakeChat() *fakeChat {
	return &fakeChat{
		users:    map[string]fakeUser{},
		tokens:   map[string]parley.User{},
		rooms:    map[string]*fakeRoom{},
		direct:   map[string]string{},
		keys:     map[[3]string]parley.Message{},
		readSeqs: map[[2]string]int64{},
		apiKeys:  map[string]parley.Token{},
	}
}

// AuthenticateToken is Authenticate, and the API keys of addKey.
func (c *fakeChat) AuthenticateToken(ctx context.Context, token string) (parley.User, parley.Token, error) {
	c.mu.Lock()
	t, ok := c.apiKeys[token]
	c.mu.Unlock()
	if ok {
		return parley.User{ID: t.UserID, Name: "bot-" + t.Key.Name}, t, nil
	}
	u, err := c.Authenticate(ctx, token)
	return u, parley.Token{UserID: u.ID}, err
}

// addKey makes an API key of a new bot (the bot is also a user of the
// fake, so that it may join rooms) and returns its token.
func (c *fakeChat) addKey(name string, scopes ...string) (string, parley.User) {
	bot := parley.User{ID: parley.NewBotID(), Name: "bot-" + name}
	token := parley.APIKeyPrefix + name + "_secret"
	c.mu.Lock()
	defer c.mu.Unlock()
	c.users[bot.Name] = fakeUser{user: bot}
	c.tokens[token] = bot
	c.apiKeys[token] = parley.Token{UserID: bot.ID, Key: &parley.APIKey{ID: parley.NewID(), Name: name, UserID: bot.ID, Scopes: scopes}}
	return token, bot
}

func errNoRoom() error { return parley.Errorf(parley.CodeNotFound, "room not found") }

func errDenied() error { return parley.Errorf(parley.CodeUnauthorized, "wrong name or password") }

func (c *fakeChat) Register(ctx context.Context, name, password string) (parley.User, error) {
	if n := len(name); n < 3 || n > 32 {
		return parley.User{}, parley.Errorf(parley.CodeInvalid, "name must be 3 to 32 characters")
	}
	if len(password) < chat.MinPassword || len(password) > chat.MaxPassword {
		return parley.User{}, parley.Errorf(parley.CodeInvalid, "password must be %d to %d bytes", chat.MinPassword, chat.MaxPassword)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.users[name]; ok {
		return parley.User{}, parley.Errorf(parley.CodeNameTaken, "name %q is taken", name)
	}
	u := parley.User{ID: parley.NewID(), Name: name, CreatedAt: parley.Now()}
	c.users[name] = fakeUser{user: u, password: password}
	return u, nil
}

func (c *fakeChat) Login(ctx context.Context, name, password string) (string, parley.User, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fu, ok := c.users[name]
	if !ok || fu.password != password {
		return "", parley.User{}, errDenied()
	}
	secret := make([]byte, 32)
	rand.Read(secret)
	token := "pt_" + base64.RawURLEncoding.EncodeToString(secret)
	c.tokens[token] = fu.user
	return token, fu.user, nil
}

func (c *fakeChat) Authenticate(ctx context.Context, token string) (parley.User, error) {
	if token == "" {
		return parley.User{}, parley.Errorf(parley.CodeUnauthorized, "missing access token")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	u, ok := c.tokens[token]
	if !ok {
		return parley.User{}, parley.Errorf(parley.CodeUnauthorized, "invalid or expired access token")
	}
	return u, nil
}

func (c *fakeChat) Logout(ctx context.Context, token string) error {
	if _, err := c.Authenticate(ctx, token); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.tokens, token)
	return nil
}

func (c *fakeChat) LogoutAll(ctx context.Context, userID string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for token, u := range c.tokens {
		if u.ID == userID {
			delete(c.tokens, token)
		}
	}
	return nil
}

func (c *fakeChat) UserByName(ctx context.Context, name string) (parley.User, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fu, ok := c.users[name]
	if !ok {
		return parley.User{}, parley.Errorf(parley.CodeNotFound, "no user named %q", name)
	}
	return fu.user, nil
}

// userByIDLocked finds a user by id.
func (c *fakeChat) userByIDLocked(id string) (parley.User, bool) {
	for _, fu := range c.users {
		if fu.user.ID == id {
			return fu.user, true
		}
	}
	return parley.User{}, false
}

func (c *fakeChat) CreateRoom(ctx context.Context, u parley.User, r chat.NewRoom) (parley.Room, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := parley.Now()
	switch r.Kind {
	case parley.KindGroup:
		if r.Peer != "" || r.Title == "" || utf8.RuneCountInString(r.Title) > chat.MaxTitle || r.Capacity < 0 {
			return parley.Room{}, false, parley.Errorf(parley.CodeInvalid, "bad group room")
		}
		fr := &fakeRoom{
			room:    parley.Room{ID: parley.NewID(), Kind: r.Kind, Title: r.Title, Capacity: r.Capacity, MemberCount: 1, LastActivityAt: now, CreatedAt: now},
			members: []string{u.ID},
			roles:   map[string]string{u.ID: parley.RoleOwner},
		}
		c.rooms[fr.room.ID] = fr
		return fr.room, true, nil
	case parley.KindDirect:
		if r.Peer == "" || r.Peer == u.ID || r.Title != "" || r.Capacity != 0 {
			return parley.Room{}, false, parley.Errorf(parley.CodeInvalid, "bad direct room")
		}
		if _, ok := c.userByIDLocked(r.Peer); !ok {
			return parley.Room{}, false, parley.Errorf(parley.CodeNotFound, "no such user")
		}
		key := parley.DirectKey(u.ID, r.Peer)
		if id, ok := c.direct[key]; ok {
			return c.rooms[id].room, false, nil
		}
		fr := &fakeRoom{
			room:    parley.Room{ID: parley.NewID(), Kind: r.Kind, MemberCount: 2, LastActivityAt: now, CreatedAt: now, DirectKey: key},
			members: []string{u.ID, r.Peer},
		}
		c.rooms[fr.room.ID] = fr
		c.direct[key] = fr.room.ID
		return fr.room, true, nil
	}
	return parley.Room{}, false, parley.Errorf(parley.CodeInvalid, "kind must be %q or %q", parley.KindGroup, parley.KindDirect)
}

// visibleLocked returns a room u may see: any group room, a direct room
// to its members only.
func (c *fakeChat) visibleLocked(u parley.User, roomID string) (*fakeRoom, error) {
	fr, ok := c.rooms[roomID]
	if !ok || fr.room.Kind == parley.KindDirect && !slices.Contains(fr.members, u.ID) {
		return nil, errNoRoom()
	}
	return fr, nil
}

// memberLocked returns a room u is a member of, failing as
// chat.Service.Authorize does.
func (c *fakeChat) memberLocked(u parley.User, roomID string) (*fakeRoom, error) {
	fr, err := c.visibleLocked(u, roomID)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(fr.members, u.ID) {
		return nil, parley.Errorf(parley.CodeForbidden, "not a member of this room")
	}
	return fr, nil
}

func (c *fakeChat) Room(ctx context.Context, u parley.User, roomID string) (parley.Room, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fr, err := c.visibleLocked(u, roomID)
	if err != nil {
		return parley.Room{}, err
	}
	return fr.room, nil
}

func (c *fakeChat) Join(ctx context.Context, u parley.User, roomID string) (parley.Room, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fr, err := c.visibleLocked(u, roomID)
	if err != nil {
		return parley.Room{}, false, err
	}
	if slices.Contains(fr.members, u.ID) {
		return fr.room, false, nil
	}
	if _, banned := fr.bans[u.ID]; banned {
		return parley.Room{}, false, parley.Errorf(parley.CodeForbidden, "banned from this room")
	}
	if fr.room.Full() {
		return parley.Room{}, false, parley.Errorf(parley.CodeRoomFull, "room is full")
	}
	fr.members = append(fr.members, u.ID)
	fr.room.MemberCount++
	return fr.room, true, nil
}

func (c *fakeChat) Leave(ctx context.Context, u parley.User, roomID string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	fr, err := c.visibleLocked(u, roomID)
	if err != nil {
		return err
	}
	if i := slices.Index(fr.members, u.ID); i >= 0 {
		fr.members = slices.Delete(fr.members, i, i+1)
		fr.room.MemberCount--
		delete(fr.roles, u.ID)
	}
	return nil
}

func checkLimit(limit int) error {
	if limit < 1 || limit > parley.MaxPageLimit {
		return parley.Errorf(parley.CodeInvalid, "limit must be 1 to %d", parley.MaxPageLimit)
	}
	return nil
}

// Rooms returns every room of u in one page, newest activity first; the
// fake has no cursors.
func (c *fakeChat) Rooms(ctx context.Context, u parley.User, cursor string, limit int) ([]parley.RoomEntry, string, error) {
	if err := checkLimit(limit); err != nil {
		return nil, "", err
	}
	if cursor != "" {
		return nil, "", parley.Errorf(parley.CodeInvalid, "malformed cursor")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []parley.RoomEntry
	for _, fr := range c.rooms {
		if !slices.Contains(fr.members, u.ID) {
			continue
		}
		e := parley.RoomEntry{Room: fr.room, Unread: parley.Unread(fr.room, c.readSeqs[[2]string{fr.room.ID, u.ID}])}
		if n := len(fr.msgs); n > 0 {
			m := fr.msgs[n-1]
			e.LastMessage = &m
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b parley.RoomEntry) int { return b.Room.LastActivityAt.Compare(a.Room.LastActivityAt) })
	return out[:min(limit, len(out))], "", nil
}

func (c *fakeChat) Messages(ctx context.Context, u parley.User, roomID string, p parley.Page) ([]parley.Message, error) {
	if err := checkLimit(p.Limit); err != nil {
		return nil, err
	}
	if p.Before < 0 {
		return nil, parley.Errorf(parley.CodeInvalid, "before must be a positive seq")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	fr, err := c.memberLocked(u, roomID)
	if err != nil {
		return nil, err
	}
	var page []parley.Message
	if !p.Forward() { // newest first, below Before (the newest when 0)
		for i := len(fr.msgs) - 1; i >= 0 && len(page) < p.Limit; i-- {
			if p.Before == 0 || fr.msgs[i].Seq < p.Before {
				page = append(page, fr.msgs[i])
			}
		}
		return page, nil
	}
	for _, m := range fr.msgs {
		if m.Seq > p.After && len(page) < p.Limit {
			page = append(page, m)
		}
	}
	return page, nil
}

func (c *fakeChat) Send(ctx context.Context, u parley.User, roomID, body, clientID string) (parley.Message, bool, error) {
	switch {
	case body == "" || !utf8.ValidString(body):
		return parley.Message{}, false, parley.Errorf(parley.CodeInvalid, "body must be non-empty valid UTF-8")
	case len(body) > c.MaxBody():
		return parley.Message{}, false, parley.Errorf(parley.CodeTooLarge, "body is over %d bytes", c.MaxBody())
	}
	if err := parley.CheckClientID(clientID); err != nil {
		return parley.Message{}, false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	fr, err := c.memberLocked(u, roomID)
	if err != nil {
		return parley.Message{}, false, err
	}
	key := [3]string{roomID, u.ID, clientID}
	if m, ok := c.keys[key]; ok && clientID != "" {
		return m, false, nil
	}
	m := parley.Message{
		ID: parley.NewID(), RoomID: roomID, Seq: fr.room.LastSeq + 1,
		SenderID: u.ID, SenderName: u.Name, Body: body, ClientID: clientID, SentAt: parley.Now(),
	}
	fr.msgs = append(fr.msgs, m)
	fr.room.LastSeq, fr.room.LastActivityAt = m.Seq, m.SentAt
	c.readSeqs[[2]string{roomID, u.ID}] = m.Seq
	if clientID != "" {
		c.keys[key] = m
	}
	return m, true, nil
}

func (c *fakeChat) MarkRead(ctx context.Context, u parley.User, roomID string, seq int64) (bool, error) {
	if seq < 0 {
		return false, parley.Errorf(parley.CodeInvalid, "seq must not be negative")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	fr, err := c.memberLocked(u, roomID)
	if err != nil {
		return false, err
	}
	k := [2]string{roomID, u.ID}
	before := c.readSeqs[k]
	c.readSeqs[k] = max(before, min(seq, fr.room.LastSeq))
	return c.readSeqs[k] > before, nil
}

func (c *fakeChat) Peer(ctx context.Context, u parley.User, r parley.Room) *parley.User {
	if r.Kind != parley.KindDirect {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	fr, ok := c.rooms[r.ID]
	if !ok {
		return nil
	}
	for _, id := range fr.members {
		if id != u.ID {
			if peer, ok := c.userByIDLocked(id); ok {
				return &peer
			}
		}
	}
	return nil
}

func (c *fakeChat) MaxBody() int { return 4096 }

// The fake has no reactions: reactions_test.go runs over the real stack
// (openStack). WithMine leaves pages as they are.
func (c *fakeChat) React(ctx context.Context, u parley.User, roomID string, seq int64, emoji string, add bool) (parley.Message, bool, error) {
	return parley.Message{}, false, parley.Errorf(parley.CodeInvalid, "fake: no reactions")
}

func (c *fakeChat) Reactors(ctx context.Context, u parley.User, roomID string, seq int64, emoji string, limit int) ([]parley.User, error) {
	return nil, parley.Errorf(parley.CodeInvalid, "fake: no reactions")
}

func (c *fakeChat) WithMine(ctx context.Context, u parley.User, roomID string, msgs []parley.Message) ([]parley.Message, error) {
	return msgs, nil
}

// The fake has no threads: cmd/parley's TestReplies runs them over the
// real node.
func (c *fakeChat) SendReply(ctx context.Context, u parley.User, roomID, body, clientID string, replyTo int64) (parley.Message, bool, error) {
	return parley.Message{}, false, parley.Errorf(parley.CodeInvalid, "fake: no replies")
}

func (c *fakeChat) Replies(ctx context.Context, u parley.User, roomID string, root, after int64, limit int) ([]parley.Message, error) {
	return nil, parley.Errorf(parley.CodeInvalid, "fake: no replies")
}

// The fake has no pins: pins_test.go runs over the real stack (openStack).
func (c *fakeChat) PinMessage(ctx context.Context, u parley.User, roomID string, seq int64, pin bool) (parley.Message, bool, error) {
	return parley.Message{}, false, parley.Errorf(parley.CodeInvalid, "fake: no pins")
}

func (c *fakeChat) Pins(ctx context.Context, u parley.User, roomID string, before int64, limit int) ([]parley.Message, error) {
	return nil, parley.Errorf(parley.CodeInvalid, "fake: no pins")
}

func (c *fakeChat) SetNotifyLevel(ctx context.Context, u parley.User, roomID, level string) error {
	return parley.Errorf(parley.CodeInvalid, "fake: no notification levels")
}
