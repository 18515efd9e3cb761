package chat

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"parley"
	"parley/jwtauth"

	"github.com/prometheus/client_golang/prometheus"
)

// Config configures a Service. Zero fields take the documented defaults.
type Config struct {
	// Store keeps the durable state (required).
	Store parley.Store
	// TokenTTL is how long an access token lives. Default 7 days.
	TokenTTL time.Duration
	// Now is the clock of token issue and expiry: a token issued at Now
	// expires TokenTTL later, and is refused once Now reaches that.
	// Default parley.Now.
	Now func() time.Time
	// MaxBody is the largest message body in bytes. Default 4096.
	MaxBody int
	// KDF sets the password hashing cost. Default DefaultKDF.
	KDF KDF
	// Registerer, when set, registers the service's metrics.
	Registerer prometheus.Registerer
	// OnRevoke, when set, is called after a logout is stored: the token
	// hash of userID, or with hash nil all of userID's tokens (it ends
	// their live sessions; see Logout).
	OnRevoke func(userID string, tokenHash []byte)
	// Seen, when set, tells the member listing who is online and when the
	// others were last seen (people.go). Nil: nobody is online and
	// nobody's last_seen_at is known.
	Seen Seen
	// Accounts, when set, deletes accounts (DeleteAccount); nil: account
	// deletion is unavailable.
	Accounts Accounts
	// NameHold is how long a deleted account's name is refused to a new
	// sign-up. Default DefaultNameHold.
	NameHold time.Duration
	// SignInWindow is how recent the sign-in behind the token of an
	// account with no password (an outside identity's) must be for
	// DeleteAccountSignedIn. Default DefaultSignInWindow.
	SignInWindow time.Duration
	// SignInLeeway is the clock skew DeleteAccountSignedIn allows on a
	// sign-in dated ahead of Now: one up to SignInLeeway ahead counts as
	// made now. Default jwtauth.DefaultLeeway, the JWT checks' own
	// (--jwt-leeway).
	SignInLeeway time.Duration
	// JWT, when set, checks the tokens shaped as JWTs (jwt.go): their
	// users sign in with them wherever a Parley token is taken. Nil: a
	// JWT is an unknown token.
	JWT JWTVerifier
	// Keys, when set, keeps server API keys (apikeys.go); nil: an API
	// key is an unknown token.
	Keys APIKeys
	// KeepMessages: a deleted account's messages stay, shown under
	// DeletedSenderName; false: they are tombstoned (their text erased).
	KeepMessages bool
	// Files, when set, keeps uploaded files (files.go); nil: uploads and
	// messages with files are refused with CodeUnavailable.
	Files *FilesConfig
	// OnMention, when set, is called after a send or an edit is stored
	// with an parley.EventMention: the message and the members to tell
	// of it (mentions.go). It must not block.
	OnMention func(parley.Event)
	// RoomMentionLimit bounds each user's @room per room (key "user:room").
	// Default NewRoomMentionLimit() (one node).
	RoomMentionLimit Limiter
}

// Service implements the chat operations. It is safe for concurrent use.
type Service struct {
	store    parley.Store
	tokenTTL time.Duration
	now      func() time.Time // clock of token issue and expiry
	maxBody  int
	kdf      KDF
	kdfSlots chan struct{} // bounds concurrent password hashing (memory-hard)
	onRevoke func(userID string, tokenHash []byte)
	seen     Seen     // nil: nobody online
	accounts Accounts // nil: no account deletion
	nameHold time.Duration
	signedIn time.Duration // Config.SignInWindow
	leeway   time.Duration // Config.SignInLeeway
	jwt      JWTVerifier   // nil: no JWT sign-in
	keep     bool          // Config.KeepMessages
	keys     APIKeys       // nil: no API keys
	files    *FilesConfig  // nil: no files

	onMention    func(parley.Event) // nil: nobody is told
	roomMentions Limiter

	accepted    prometheus.Counter
	provisioned prometheus.Counter // accounts made for outside identities
}

// New returns a Service over cfg.Store.
func New(cfg Config) *Service {
	if cfg.TokenTTL <= 0 {
		cfg.TokenTTL = 7 * 24 * time.Hour
	}
	if cfg.Now == nil {
		cfg.Now = parley.Now
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = 4096
	}
	if cfg.NameHold <= 0 {
		cfg.NameHold = DefaultNameHold
	}
	if cfg.SignInWindow <= 0 {
		cfg.SignInWindow = DefaultSignInWindow
	}
	if cfg.SignInLeeway <= 0 {
		cfg.SignInLeeway = jwtauth.DefaultLeeway
	}
	if cfg.KDF == (KDF{}) {
		cfg.KDF = DefaultKDF
	}
	if f := cfg.Files; f != nil {
		fc := *f
		if fc.MaxSize <= 0 {
			fc.MaxSize = DefaultFileMaxSize
		}
		if fc.Quota <= 0 {
			fc.Quota = DefaultFileQuota
		}
		if fc.UnattachedTTL <= 0 {
			fc.UnattachedTTL = DefaultUnattachedTTL
		}
		cfg.Files = &fc
	}
	if cfg.RoomMentionLimit == nil {
		cfg.RoomMentionLimit = NewRoomMentionLimit()
	}
	s := &Service{
		onMention:    cfg.OnMention,
		roomMentions: cfg.RoomMentionLimit,
		files:        cfg.Files,
		store:        cfg.Store,
		tokenTTL:     cfg.TokenTTL,
		now:          cfg.Now,
		maxBody:      cfg.MaxBody,
		kdf:          cfg.KDF,
		kdfSlots:     make(chan struct{}, kdfConcurrency()),
		onRevoke:     cfg.OnRevoke,
		seen:         cfg.Seen,
		accounts:     cfg.Accounts,
		nameHold:     cfg.NameHold,
		signedIn:     cfg.SignInWindow,
		leeway:       cfg.SignInLeeway,
		jwt:          cfg.JWT,
		keep:         cfg.KeepMessages,
		keys:         cfg.Keys,
		accepted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_messages_accepted_total",
			Help: "Messages stored, from every transport (idempotent repeats excluded).",
		}),
	}
	s.provisioned = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "parley_jwt_users_provisioned_total",
		Help: "Accounts made on the first sight of a JWT's (issuer, subject).",
	})
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(s.accepted, s.provisioned)
	}
	return s
}

// MaxBody returns the largest message body accepted, in bytes.
func (s *Service) MaxBody() int { return s.maxBody }

// Ping checks that the store is reachable.
func (s *Service) Ping(ctx context.Context) error { return s.store.Ping(ctx) }

// NewRoom is a request to create a room.
type NewRoom struct {
	Kind     string
	Title    string
	Capacity int
	Peer     string // user id of the other member of a direct room
}

// MaxTitle is the longest room title, in characters.
const MaxTitle = 100

// CreateRoom creates a group room with u as its first member, or returns the
// direct room of u and the peer (created false when it existed already).
func (s *Service) CreateRoom(ctx context.Context, u parley.User, r NewRoom) (parley.Room, bool, error) {
	switch r.Kind {
	case parley.KindGroup:
		if r.Peer != "" {
			return parley.Room{}, false, parley.Errorf(parley.CodeInvalid, "a group room has no peer")
		}
		if !utf8.ValidString(r.Title) || r.Title == "" || utf8.RuneCountInString(r.Title) > MaxTitle {
			return parley.Room{}, false, parley.Errorf(parley.CodeInvalid, "title must be 1 to %d characters of valid UTF-8", MaxTitle)
		}
		if r.Capacity < 0 {
			return parley.Room{}, false, parley.Errorf(parley.CodeInvalid, "capacity must be 0 (unlimited) or more")
		}
	case parley.KindDirect:
		if r.Peer == "" {
			return parley.Room{}, false, parley.Errorf(parley.CodeInvalid, "a direct room needs a peer")
		}
		if r.Peer == u.ID {
			return parley.Room{}, false, parley.Errorf(parley.CodeInvalid, "a direct room needs a peer other than yourself")
		}
		if r.Title != "" || r.Capacity != 0 {
			return parley.Room{}, false, parley.Errorf(parley.CodeInvalid, "a direct room has no title or capacity")
		}
	default:
		return parley.Room{}, false, parley.Errorf(parley.CodeInvalid, "kind must be %q or %q", parley.KindGroup, parley.KindDirect)
	}
	return s.store.CreateRoom(ctx, parley.NewRoom{
		Kind: r.Kind, Title: r.Title, Capacity: r.Capacity, CreatorID: u.ID, PeerID: r.Peer,
	})
}

// Room returns a room's info. Any user may see a group room (to join it by
// link); a direct room is visible to its two members only (CodeNotFound
// for anyone else, so its existence does not leak).
func (s *Service) Room(ctx context.Context, u parley.User, roomID string) (parley.Room, error) {
	r, err := s.store.Room(ctx, roomID)
	if err != nil {
		return parley.Room{}, hideRoom(err)
	}
	if r.Kind == parley.KindDirect {
		if _, err := s.store.Member(ctx, roomID, u.ID); err != nil {
			return parley.Room{}, errRoomNotFound()
		}
	}
	return r, nil
}

// errRoomNotFound is the one answer for a room a user may not see, word for
// word: an unknown id and a direct room of others must read the same, or
// the text would tell which ids are hidden rooms.
func errRoomNotFound() error { return parley.Errorf(parley.CodeNotFound, "room not found") }

// hideRoom turns a store's not_found for a room into errRoomNotFound,
// whatever the store's own text (which may name the id).
func hideRoom(err error) error {
	if parley.ErrorCode(err) == parley.CodeNotFound {
		return errRoomNotFound()
	}
	return err
}

// Join makes u a member of a room. joined is false when u was one already.
func (s *Service) Join(ctx context.Context, u parley.User, roomID string) (parley.Room, bool, error) {
	r, joined, err := s.store.Join(ctx, roomID, u.ID)
	if parley.ErrorCode(err) == parley.CodeForbidden {
		if r, rerr := s.store.Room(ctx, roomID); rerr == nil && r.Kind == parley.KindGroup {
			return parley.Room{}, false, err // banned
		}
		// Otherwise it is a direct room. To its two members it is a
		// room they are in already (200, as for any member); to everyone
		// else it stays invisible.
		if _, merr := s.store.Member(ctx, roomID, u.ID); merr == nil {
			r, err := s.Room(ctx, u, roomID)
			return r, false, err
		}
		return parley.Room{}, false, errRoomNotFound()
	}
	return r, joined, hideRoom(err)
}

// Leave removes u from a room; leaving a group room one is not in is a
// no-op. A direct room stays invisible to everyone but its members: to
// them it is CodeNotFound, as on every other route.
func (s *Service) Leave(ctx context.Context, u parley.User, roomID string) error {
	if _, err := s.Room(ctx, u, roomID); err != nil { // hides a direct room of others
		return err
	}
	_, err := s.store.Leave(ctx, roomID, u.ID)
	return hideRoom(err)
}

// Authorize checks that u is a member of the room: CodeNotFound for an
// unknown room (or a direct room of others), CodeForbidden for a
// non-member of a group room.
func (s *Service) Authorize(ctx context.Context, u parley.User, roomID string) (parley.Member, error) {
	m, err := s.store.Member(ctx, roomID, u.ID)
	if err == nil {
		return m, nil
	}
	if parley.ErrorCode(err) != parley.CodeNotFound {
		return parley.Member{}, err
	}
	r, rerr := s.store.Room(ctx, roomID)
	if rerr != nil {
		return parley.Member{}, hideRoom(rerr)
	}
	if r.Kind == parley.KindDirect {
		// A direct room is invisible to everyone but its two members.
		return parley.Member{}, errRoomNotFound()
	}
	return parley.Member{}, parley.Errorf(parley.CodeForbidden, "not a member of this room")
}

// Rooms returns u's room list, newest activity first.
func (s *Service) Rooms(ctx context.Context, u parley.User, cursor string, limit int) ([]parley.RoomEntry, string, error) {
	if err := checkLimit(limit); err != nil {
		return nil, "", err
	}
	// A malformed cursor: CodeInvalid. The entries carry the mention
	// counts and levels (parley.RoomEntry).
	return s.store.Rooms(ctx, u.ID, cursor, limit)
}

// Messages returns a page of a room's history to a member.
func (s *Service) Messages(ctx context.Context, u parley.User, roomID string, p parley.Page) ([]parley.Message, error) {
	if err := checkLimit(p.Limit); err != nil {
		return nil, err
	}
	if p.Before < 0 {
		return nil, parley.Errorf(parley.CodeInvalid, "before must be a positive seq")
	}
	if _, err := s.Authorize(ctx, u, roomID); err != nil {
		return nil, err
	}
	return s.store.Messages(ctx, roomID, p)
}

// MaxClientID is the longest idempotency key, in bytes.
const MaxClientID = parley.MaxClientID

// Send stores a message from member u. A repeated clientID returns the
// original message with created false.
func (s *Service) Send(ctx context.Context, u parley.User, roomID, body, clientID string) (parley.Message, bool, error) {
	return s.SendReply(ctx, u, roomID, body, clientID, 0)
}

// checkSend checks a send before the store sees it: the body (which may
// be empty with emptyOK: a message of files only), the client-id, and
// that u is a member of the room; it returns the body's mentions
// (mentions.go).
func (s *Service) checkSend(ctx context.Context, u parley.User, roomID, body, clientID string, emptyOK bool) (parley.MentionList, error) {
	if body != "" || !emptyOK {
		if err := s.CheckBody(body); err != nil {
			return "", err
		}
	}
	if err := parley.CheckClientID(clientID); err != nil {
		return "", err
	}
	me, err := s.Authorize(ctx, u, roomID)
	if err != nil {
		return "", err
	}
	return s.resolveMentions(ctx, u, me, roomID, body, false)
}

// SendReply is Send of a reply to message replyTo of the room (0: no
// reply; replies.go): a seq that is no message of the room is
// CodeInvalid, a deleted message CodeConflict.
func (s *Service) SendReply(ctx context.Context, u parley.User, roomID, body, clientID string, replyTo int64) (parley.Message, bool, error) {
	if replyTo < 0 {
		return parley.Message{}, false, parley.Errorf(parley.CodeInvalid, "reply_to must be a seq of 1 or more")
	}
	mentions, err := s.checkSend(ctx, u, roomID, body, clientID, false)
	if err != nil {
		return parley.Message{}, false, err
	}
	m, created, err := s.store.Send(ctx, parley.NewMessage{
		RoomID: roomID, SenderID: u.ID, SenderName: u.Name, Body: body, ClientID: clientID, ReplyTo: replyTo, Mentions: mentions,
	})
	if err == nil && created {
		s.accepted.Inc()
		s.tellMentioned(ctx, m, "")
	}
	if err == nil && !created && m.Body != body && m.Change == 0 {
		// The same idempotency key with another body is a client bug (a
		// key reused for a new message): returning the stored one would
		// lose the new text without a word. A message edited or deleted
		// since (Change > 0) has another body by right: the resend of
		// its original gets it as it is now.
		return parley.Message{}, false, parley.Errorf(parley.CodeConflict,
			"client_id %q was sent before with another body (seq %d); use a new client_id for a new message", clientID, m.Seq)
	}
	return m, created, err
}

// CheckBody validates a message body: non-empty valid UTF-8 of at most
// MaxBody bytes.
func (s *Service) CheckBody(body string) error {
	switch {
	case body == "":
		return parley.Errorf(parley.CodeInvalid, "body must not be empty")
	case len(body) > s.maxBody:
		return parley.Errorf(parley.CodeTooLarge, "body is over %d bytes", s.maxBody)
	case !utf8.ValidString(body):
		return parley.Errorf(parley.CodeInvalid, "body must be valid UTF-8")
	}
	return nil
}

// MarkRead moves u's read position in a room forward to seq (capped at
// the room's last seq) and reports whether it moved. One that would not
// move writes nothing.
func (s *Service) MarkRead(ctx context.Context, u parley.User, roomID string, seq int64) (moved bool, err error) {
	if seq < 0 {
		return false, parley.Errorf(parley.CodeInvalid, "seq must not be negative")
	}
	m, err := s.Authorize(ctx, u, roomID)
	if err != nil {
		return false, err
	}
	// A mark at or below the position, once capped at the room's last
	// seq, moves nothing: it is answered from the membership and the room
	// as the hot data holds them, with no store write. A client hears of
	// a message only once the hot data holds it, so a mark of a message it
	// was shown is never taken for one that moves nothing.
	r, err := s.store.Room(ctx, roomID)
	if err != nil {
		return false, hideRoom(err)
	}
	if min(seq, r.LastSeq) <= m.ReadSeq {
		return false, nil
	}
	after, err := s.store.MarkRead(ctx, roomID, u.ID, seq)
	if err != nil {
		return false, err
	}
	return after.ReadSeq > m.ReadSeq, nil
}

func checkLimit(limit int) error {
	if limit < 1 || limit > parley.MaxPageLimit {
		return parley.Errorf(parley.CodeInvalid, "limit must be 1 to %d", parley.MaxPageLimit)
	}
	return nil
}

// Peer returns the other member of a direct room, as seen by u; nil for a
// group room, or if the peer cannot be read (the room is still usable).
func (s *Service) Peer(ctx context.Context, u parley.User, r parley.Room) *parley.User {
	if r.Kind != parley.KindDirect {
		return nil
	}
	a, b, ok := strings.Cut(r.DirectKey, ":")
	if !ok {
		return nil
	}
	id := a
	if a == u.ID {
		id = b
	}
	peer, err := s.store.User(ctx, id)
	if err != nil {
		return nil
	}
	return &peer
}
