package bulk

import (
	"context"
	"fmt"
	"io"

	"parley"
)

// Batch is what one transaction of an import writes: records of the file
// in its order, grouped by type.
type Batch struct {
	Users      []User
	Tokens     []Token
	APIKeys    []APIKey
	NameHolds  []NameHold
	Rooms      []Room
	Messages   []parley.Message
	ChangeKeys []ChangeKey
	Reactions  []Reaction
	Files      []File
	Bans       []parley.Ban
	Members    []Member
}

func (b *Batch) len() int {
	return len(b.Users) + len(b.Tokens) + len(b.APIKeys) + len(b.NameHolds) + len(b.Rooms) + len(b.Messages) +
		len(b.ChangeKeys) + len(b.Reactions) + len(b.Files) + len(b.Bans) + len(b.Members)
}

func (b *Batch) add(r Record) {
	switch {
	case r.User != nil:
		b.Users = append(b.Users, *r.User)
	case r.Token != nil:
		b.Tokens = append(b.Tokens, *r.Token)
	case r.APIKey != nil:
		b.APIKeys = append(b.APIKeys, *r.APIKey)
	case r.NameHold != nil:
		b.NameHolds = append(b.NameHolds, *r.NameHold)
	case r.Room != nil:
		b.Rooms = append(b.Rooms, *r.Room)
	case r.Message != nil:
		b.Messages = append(b.Messages, *r.Message)
	case r.ChangeKey != nil:
		b.ChangeKeys = append(b.ChangeKeys, *r.ChangeKey)
	case r.Reaction != nil:
		b.Reactions = append(b.Reactions, *r.Reaction)
	case r.File != nil:
		b.Files = append(b.Files, *r.File)
	case r.Ban != nil:
		b.Bans = append(b.Bans, *r.Ban)
	case r.Member != nil:
		b.Members = append(b.Members, *r.Member)
	}
}

func (b *Batch) reset() {
	*b = Batch{Users: b.Users[:0], Tokens: b.Tokens[:0], APIKeys: b.APIKeys[:0], NameHolds: b.NameHolds[:0], Rooms: b.Rooms[:0],
		Messages: b.Messages[:0], ChangeKeys: b.ChangeKeys[:0], Reactions: b.Reactions[:0], Files: b.Files[:0], Bans: b.Bans[:0], Members: b.Members[:0]}
}

// Sink is a store an import writes into.
type Sink interface {
	// Import writes b in one transaction, in the order users, tokens,
	// API keys, name holds, rooms, messages, change keys, reactions, files, bans, members, and
	// returns how many records it wrote. A record already there is
	// skipped (the target's version stays): a user by id, a token by
	// hash, an API key by id, a name hold by name, a room by id, a message by room and
	// seq, a change key by room, user and client_id, a reaction by room,
	// seq, emoji and user, a file by id, a ban and a member
	// by room and user (with its notification level: a member already
	// there keeps the target's). A message is stored with its mentions,
	// a member with its level (parley.NotifyAll when empty), as a send
	// and a level's change store them. A room's counters (last_seq, last_change,
	// last_activity_at) only move forward, to cover its messages, and
	// its member_count is its members' count. It fails with
	// parley.CodeConflict, and writes nothing of b, for a record that
	// contradicts the target: a user's name held by another id, an API
	// key's name held by another key, a room
	// of another kind, pair or creation time under the same id, a
	// message whose seq holds another message id, a direct room of the
	// same pair under another id, or members past the room's capacity or
	// with a second owner.
	Import(ctx context.Context, b *Batch) (Counts, error)
}

// ImportOptions configures Import. Zero fields take the documented
// defaults.
type ImportOptions struct {
	// BatchSize is the most records one transaction writes. Default
	// 1,000.
	BatchSize int
	// AfterBatch, when set, runs after each batch is committed (cluster
	// mode forgets the hot data of what it touched); its error ends the
	// import.
	AfterBatch func(ctx context.Context, b *Batch) error
}

// Result is what Import read and wrote.
type Result struct {
	Header  Header
	File    Counts // the records of the file
	Written Counts // the records written; the others were there already
	// DroppedMentions is how many mentions of the file's messages Write
	// left out: those of users who are not members of the message's
	// room in the file (who left the room, or whose account was
	// deleted, after the mention; an import cannot tell them from a
	// user of the target with that id).
	DroppedMentions int64

	strays map[string]map[string]bool // Reader.Strays, by Check
}

// Check reads the whole file r and checks every line against the format:
// a foreign, garbled, newer or truncated file fails with ErrNotExport,
// ErrNewer or ErrInvalid. It returns the file's header and counts.
func Check(r io.Reader) (Result, error) {
	rd, err := NewReader(r)
	if err != nil {
		return Result{}, err
	}
	for err == nil {
		_, err = rd.Next()
	}
	if err != io.EOF {
		return Result{}, err
	}
	return Result{Header: rd.Header, File: rd.Counts(), strays: rd.Strays()}, nil
}

// Import checks the whole file f first (Check: nothing is written when it
// fails), then reads it again from the start and writes it into sink in
// batches of opt.BatchSize records, each in one transaction. Records
// already in the target are skipped, so an import run again after a
// failure, or twice, ends with the file's data written once. A conflict
// (Sink.Import) stops it: the batches before stay written, the failed one
// is not.
func Import(ctx context.Context, sink Sink, f io.ReadSeeker, opt ImportOptions) (Result, error) {
	res, err := Check(f)
	if err != nil {
		return res, err
	}
	return Write(ctx, sink, f, res, opt)
}

// Write is Import after its Check: res is what Check returned for f,
// which Write reads again from the start. A caller that checks the file
// before it opens the store (so that a bad file makes no database) calls
// Check, then Write, and reads the file twice, not three times.
func Write(ctx context.Context, sink Sink, f io.ReadSeeker, res Result, opt ImportOptions) (Result, error) {
	if opt.BatchSize <= 0 {
		opt.BatchSize = 1000
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return res, fmt.Errorf("import: %w", err)
	}
	rd, err := NewReader(f)
	if err != nil {
		return res, err
	}
	var b Batch
	flush := func() error {
		n, err := sink.Import(ctx, &b)
		if err != nil {
			return err
		}
		res.Written.Add(n)
		if opt.AfterBatch != nil {
			if err := opt.AfterBatch(ctx, &b); err != nil {
				return err
			}
		}
		b.reset()
		return nil
	}
	for {
		r, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return res, err // the file changed since the check
		}
		if r.Message != nil {
			res.DroppedMentions += dropStrays(r.Message, res.strays[r.Message.RoomID])
		}
		if b.add(r); b.len() >= opt.BatchSize {
			if err := flush(); err != nil {
				return res, err
			}
		}
	}
	if b.len() > 0 {
		if err := flush(); err != nil {
			return res, err
		}
	}
	return res, nil
}

// dropStrays removes from m's mentions the users of stray (users who are
// not members of its room in the file) and returns how many it removed.
func dropStrays(m *parley.Message, stray map[string]bool) int64 {
	if len(stray) == 0 || m.Mentions == "" {
		return 0
	}
	ids := m.Mentions.IDs()
	kept := ids[:0]
	for _, id := range ids {
		if !stray[id] {
			kept = append(kept, id)
		}
	}
	m.Mentions = parley.JoinMentions(kept)
	return int64(len(ids) - len(kept))
}
