package bulk

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"parley"
)

// Errors of reading a file, wrapped with the line they are about.
var (
	// ErrNotExport: the file is not a parley-export file (its first line
	// is not a header of Format).
	ErrNotExport = errors.New("not a parley-export file")
	// ErrNewer: the file's format version is newer than this program's.
	ErrNewer = errors.New("format version newer than this program's")
	// ErrInvalid: a record is malformed, out of order or inconsistent
	// with its room, or the file ends without its end line.
	ErrInvalid = errors.New("invalid parley-export file")
)

// fileID is what a file's id is made of: it names its blob (files.Blobs).
var fileID = regexp.MustCompile(`^[a-z0-9]{1,64}$`)

// maxLine is the longest line a Reader accepts.
const maxLine = 16 << 20

// The order of the record types in a file (see the type constants).
var rank = map[string]int{
	typeUser: 1, typeToken: 2, typeAPIKey: 3, typeNameHold: 4, typeRoom: 5,
	typeMessage: 6, typeChangeKey: 7, typeReaction: 8, typeFile: 9, typeBan: 10, typeMember: 11, typeEnd: 12,
}

// Reader reads a parley-export file a record at a time, checking each
// against the format (docs/export-format.md): its type, fields, order and
// room, and at the end line the counts.
type Reader struct {
	// Header is the file's first line.
	Header Header

	br     *bufio.Reader
	n      int    // the number of the line read last
	rank   int    // the rank of the record read last
	lastID string // the id of the last user or room, which ascend
	room   *Room  // the room whose records are being read
	seq    int64  // its last message's seq
	pins   int    // its pinned messages so far
	count  Counts // the records read so far
	done   bool   // the end line is read

	// mentioned is the users the room's messages mention and its members
	// read so far do not hold; at the room's end they are its strays.
	mentioned map[string]bool
	stray     map[string]map[string]bool // by room: users mentioned who are not its members in the file
}

// NewReader reads and checks the header of the file r: ErrNotExport for
// a file that is not one, ErrNewer for a newer version.
func NewReader(r io.Reader) (*Reader, error) {
	rd := &Reader{br: bufio.NewReaderSize(r, 64<<10)}
	b, err := rd.readLine()
	if err == io.EOF {
		return nil, fmt.Errorf("%w: the file is empty", ErrNotExport)
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &rd.Header); err != nil || rd.Header.Format != Format || rd.Header.Type != "header" {
		return nil, fmt.Errorf("%w: line 1 is not its header {\"format\":%q,…}", ErrNotExport, Format)
	}
	switch v := rd.Header.Version; {
	case v > Version:
		return nil, fmt.Errorf("%w: the file is version %d, this program reads up to %d: use a newer parley", ErrNewer, v, Version)
	case v < 1:
		return nil, fmt.Errorf("%w: line 1: version %d", ErrInvalid, v)
	}
	return rd, nil
}

// readLine returns the next non-empty line, without its newline.
func (rd *Reader) readLine() ([]byte, error) {
	for {
		var buf []byte
		for {
			part, err := rd.br.ReadSlice('\n')
			if len(buf)+len(part) > maxLine {
				return nil, fmt.Errorf("%w: line %d is longer than %d bytes", ErrInvalid, rd.n+1, maxLine)
			}
			buf = append(buf, part...)
			if err == bufio.ErrBufferFull {
				continue
			}
			if err == io.EOF && len(buf) > 0 {
				break
			}
			if err != nil {
				return nil, err
			}
			break
		}
		rd.n++
		if b := bytes.TrimSpace(buf); len(b) > 0 {
			return b, nil
		}
	}
}

// Record is one record of a file: one of its fields is set.
type Record struct {
	User      *User
	Token     *Token
	APIKey    *APIKey
	NameHold  *NameHold
	Room      *Room
	Message   *parley.Message
	ChangeKey *ChangeKey
	Reaction  *Reaction
	File      *File
	Ban       *parley.Ban
	Member    *Member
}

// Next returns the next record, and io.EOF after the end line once its
// counts match the records read. A file that ends without it fails with
// ErrInvalid (an export cut short), and so does every record that breaks
// the format, naming its line.
func (rd *Reader) Next() (Record, error) {
	b, err := rd.readLine()
	if err == io.EOF {
		if rd.done {
			return Record{}, io.EOF
		}
		return Record{}, fmt.Errorf("%w: it ends at line %d without its end line: an export cut short?", ErrInvalid, rd.n)
	}
	if err != nil {
		return Record{}, err
	}
	if rd.done {
		return Record{}, rd.bad("a line after the end line")
	}
	var l line
	if err := json.Unmarshal(b, &l); err != nil {
		return Record{}, rd.bad("not a JSON object: %v", err)
	}
	if err := rd.check(&l); err != nil {
		return Record{}, err
	}
	if l.Type == typeEnd {
		rd.done = true
		rd.endRoom()
		return rd.Next()
	}
	return Record{User: l.User, Token: l.Token, APIKey: l.APIKey, NameHold: l.NameHold, Room: l.Room, Message: l.Message,
		ChangeKey: l.ChangeKey, Reaction: l.Reaction, File: l.File, Ban: l.Ban, Member: l.Member}, nil
}

// Counts is what the records read so far hold.
func (rd *Reader) Counts() Counts { return rd.count }

// Strays returns, for each room read whole so far, the users its
// messages mention who are not its members in the file (they left, or
// their accounts were deleted, after the mention): an import drops them
// from the mentions (Write). Rooms with none are absent.
func (rd *Reader) Strays() map[string]map[string]bool { return rd.stray }

// endRoom keeps the room's mentioned users that none of its members held.
func (rd *Reader) endRoom() {
	if rd.room != nil && len(rd.mentioned) > 0 {
		if rd.stray == nil {
			rd.stray = map[string]map[string]bool{}
		}
		rd.stray[rd.room.ID] = rd.mentioned
	}
	rd.mentioned = nil
}

// checkMentions checks message m's mentions: user ids (or
// parley.MentionRoom), each once, at most parley.MaxMentions, none in a
// tombstone; and notes the users it mentions for Strays.
func (rd *Reader) checkMentions(m *parley.Message) error {
	if m.Mentions == "" {
		return nil
	}
	if m.DeletedAt != nil {
		return rd.bad("deleted message %d has mentions", m.Seq)
	}
	ids := m.Mentions.IDs()
	if len(ids) > parley.MaxMentions {
		return rd.bad("message %d mentions %d users, at most %d", m.Seq, len(ids), parley.MaxMentions)
	}
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		switch {
		case id == "" || strings.ContainsAny(id, ", \t\n"):
			return rd.bad("message %d: mention %q is not a user id nor %q", m.Seq, id, parley.MentionRoom)
		case seen[id]:
			return rd.bad("message %d mentions %q twice", m.Seq, id)
		}
		seen[id] = true
		if id != parley.MentionRoom {
			if rd.mentioned == nil {
				rd.mentioned = map[string]bool{}
			}
			rd.mentioned[id] = true
		}
	}
	return nil
}

func (rd *Reader) bad(format string, args ...any) error {
	return fmt.Errorf("%w: line %d: %s", ErrInvalid, rd.n, fmt.Sprintf(format, args...))
}

// check checks l against the format and the records before it.
func (rd *Reader) check(l *line) error {
	r, ok := rank[l.Type]
	if !ok {
		return rd.bad("unknown record type %q", l.Type)
	}
	var set int
	for _, p := range []bool{l.User != nil, l.Token != nil, l.APIKey != nil, l.NameHold != nil, l.Room != nil, l.Message != nil,
		l.ChangeKey != nil, l.Reaction != nil, l.File != nil, l.Ban != nil, l.Member != nil, l.Counts != nil} {
		if p {
			set++
		}
	}
	if set != 1 {
		return rd.bad("a %s record carries %d objects, want 1", l.Type, set)
	}
	inRoom := r > rank[typeRoom] && r < rank[typeEnd]
	switch {
	case r < rd.rank && !(l.Type == typeRoom && rd.rank >= rank[typeRoom]):
		return rd.bad("a %s record after the %s records: out of order", l.Type, typeOf(rd.rank))
	case inRoom && rd.room == nil:
		return rd.bad("a %s record before any room", l.Type)
	}
	if l.Type == typeRoom && rd.rank >= rank[typeRoom] {
		rd.rank = rank[typeRoom]
	}
	rd.rank = max(rd.rank, r)
	switch l.Type {
	case typeUser:
		u := l.User
		if u.ID == "" || u.Name == "" {
			return rd.bad("a user without id or name")
		}
		if u.ID <= rd.lastID {
			return rd.bad("user %q after %q: users ascend by id", u.ID, rd.lastID)
		}
		rd.lastID = u.ID
		rd.count.Users++
	case typeToken:
		if len(l.Token.Hash) == 0 || l.Token.UserID == "" {
			return rd.bad("a token without hash or user")
		}
		rd.count.Tokens++
	case typeAPIKey:
		if k := l.APIKey; k.ID == "" || k.Name == "" || k.UserID == "" || len(k.Hash) == 0 {
			return rd.bad("an API key without id, name, user or hash")
		}
		rd.count.APIKeys++
	case typeNameHold:
		if l.NameHold.Name == "" {
			return rd.bad("a name hold without a name")
		}
		rd.count.NameHolds++
	case typeRoom:
		return rd.checkRoom(l.Room)
	case typeMessage:
		m := l.Message
		switch {
		case m.RoomID != rd.room.ID:
			return rd.bad("message of room %q inside room %q", m.RoomID, rd.room.ID)
		case m.ID == "" || m.SenderID == "":
			return rd.bad("a message without id or sender")
		case m.Seq <= rd.seq || m.Seq > rd.room.LastSeq:
			return rd.bad("message seq %d: want above %d and at most the room's last_seq %d", m.Seq, rd.seq, rd.room.LastSeq)
		case m.Change < 0 || m.Change > rd.room.LastChange:
			return rd.bad("message change %d: want 0 to the room's last_change %d", m.Change, rd.room.LastChange)
		case m.DeletedAt != nil && m.Body != "":
			return rd.bad("deleted message %d has a body", m.Seq)
		case m.Pinned != nil && (m.Pinned.By == "" || m.Pinned.Change < 1 || m.Pinned.Change > m.Change):
			return rd.bad("message %d: a pin by %q of change %d: want a user and a change from 1 to the message's change %d", m.Seq, m.Pinned.By, m.Pinned.Change, m.Change)
		}
		if m.Pinned != nil && m.DeletedAt == nil {
			if rd.pins++; rd.pins > parley.MaxPinsPerRoom {
				return rd.bad("message %d: more than %d pinned messages in room %q", m.Seq, parley.MaxPinsPerRoom, rd.room.ID)
			}
		}
		if err := parley.CheckClientID(m.ClientID); err != nil {
			return rd.bad("message %d: %v", m.Seq, err)
		}
		if err := rd.checkMentions(m); err != nil {
			return err
		}
		rd.seq = m.Seq
		rd.count.Messages++
	case typeChangeKey:
		k := l.ChangeKey
		if k.RoomID != rd.room.ID || k.UserID == "" || k.ClientID == "" || k.Seq < 1 || k.Seq > rd.room.LastSeq {
			return rd.bad("a change key of room %q: want room %q, a user, a client_id and a seq of the room", k.RoomID, rd.room.ID)
		}
		rd.count.ChangeKeys++
	case typeReaction:
		x := l.Reaction
		if x.RoomID != rd.room.ID || x.UserID == "" || x.Seq < 1 || x.Seq > rd.room.LastSeq {
			return rd.bad("a reaction of room %q: want room %q, a user and a seq of the room", x.RoomID, rd.room.ID)
		}
		if err := parley.CheckEmoji(x.Emoji); err != nil {
			return rd.bad("reaction on message %d: %v", x.Seq, err)
		}
		rd.count.Reactions++
	case typeFile:
		f := l.File
		switch {
		case f.RoomID != rd.room.ID || f.Uploader == "":
			return rd.bad("a file of room %q: want room %q and an uploader", f.RoomID, rd.room.ID)
		case !fileID.MatchString(f.ID):
			return rd.bad("file id %q: not an id the server makes", f.ID)
		case f.Size <= 0 || f.Size > MaxFileSize:
			return rd.bad("file %s: size %d, want 1 to %d bytes (1 TiB)", f.ID, f.Size, MaxFileSize)
		case len(f.SHA256) != 32:
			return rd.bad("file %s: want a 32-byte sha256", f.ID)
		case f.Seq < 0 || f.Seq > rd.room.LastSeq:
			return rd.bad("file %s: seq %d, want 0 (unattached) to the room's last_seq %d", f.ID, f.Seq, rd.room.LastSeq)
		}
		rd.count.Files++
	case typeBan:
		if b := l.Ban; b.RoomID != rd.room.ID || b.UserID == "" || b.ActorID == "" {
			return rd.bad("a ban of room %q: want room %q, a user and an actor", b.RoomID, rd.room.ID)
		}
		rd.count.Bans++
	case typeMember:
		m := l.Member
		if m.RoomID != rd.room.ID || m.UserID == "" {
			return rd.bad("a member of room %q: want room %q and a user", m.RoomID, rd.room.ID)
		}
		if m.Role != parley.RoleOwner && m.Role != parley.RoleAdmin && m.Role != parley.RoleMember {
			return rd.bad("member %q: role %q", m.UserID, m.Role)
		}
		if m.Notifications != "" {
			if err := parley.CheckNotifyLevel(m.Notifications); err != nil {
				return rd.bad("member %q: notifications %q: %s", m.UserID, m.Notifications, parley.ErrorMessage(err))
			}
		}
		delete(rd.mentioned, m.UserID)
		rd.count.Members++
	case typeEnd:
		if *l.Counts != rd.count {
			return rd.bad("the end line counts %+v, the file holds %+v", *l.Counts, rd.count)
		}
	}
	return nil
}

func (rd *Reader) checkRoom(r *Room) error {
	switch {
	case r.ID == "":
		return rd.bad("a room without id")
	case rd.Header.Room != "" && r.ID != rd.Header.Room:
		return rd.bad("room %q in the export of room %q", r.ID, rd.Header.Room)
	case r.Kind != parley.KindGroup && r.Kind != parley.KindDirect:
		return rd.bad("room %q: kind %q", r.ID, r.Kind)
	case (r.Kind == parley.KindDirect) != (r.DirectKey != ""):
		return rd.bad("room %q: a %s room with direct_key %q", r.ID, r.Kind, r.DirectKey)
	case r.Capacity < 0 || r.LastSeq < 0 || r.LastChange < 0 || r.RetentionSeconds < 0 || r.RetentionSeconds > parley.MaxRetentionSeconds:
		return rd.bad("room %q: a negative or out-of-bounds capacity, last_seq, last_change or retention_seconds", r.ID)
	}
	if rd.room != nil && r.ID <= rd.room.ID {
		return rd.bad("room %q after %q: rooms ascend by id", r.ID, rd.room.ID)
	}
	rd.endRoom()
	rd.room, rd.seq, rd.pins = r, 0, 0
	rd.count.Rooms++
	return nil
}

func typeOf(r int) string {
	for t, n := range rank {
		if n == r {
			return t
		}
	}
	return "?"
}
