package bulk

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"parley"
)

// Source is a consistent snapshot of one store, read for an export. Each
// method streams its records to each, in a stable order, and stops at the
// first error each returns; it may hold a cursor open meanwhile, so each
// must not call the Source. roomID, when not empty, limits Users to the
// accounts the room's records name (members, bans and their actors,
// senders, change keys) and Tokens and APIKeys to theirs.
type Source interface {
	// Users streams the accounts, by id; with secrets, with their
	// password hashes.
	Users(ctx context.Context, roomID string, secrets bool, each func(*User) error) error
	// Tokens streams the stored tokens, by hash.
	Tokens(ctx context.Context, roomID string, each func(*Token) error) error
	// APIKeys streams the API keys, revoked ones included, by id.
	APIKeys(ctx context.Context, roomID string, each func(*APIKey) error) error
	// NameHolds streams the held names, by name.
	NameHolds(ctx context.Context, each func(*NameHold) error) error
	// Rooms returns at most limit rooms with ids above after, by id.
	Rooms(ctx context.Context, after string, limit int) ([]Room, error)
	// Room returns one room: parley.CodeNotFound when it does not exist.
	Room(ctx context.Context, id string) (Room, error)
	// Messages streams the room's messages, tombstones included, by seq.
	Messages(ctx context.Context, roomID string, each func(*parley.Message) error) error
	// ChangeKeys streams the room's change keys, by user and client_id.
	ChangeKeys(ctx context.Context, roomID string, each func(*ChangeKey) error) error
	// Reactions streams the room's reactions, by seq, emoji and user.
	Reactions(ctx context.Context, roomID string, each func(*Reaction) error) error
	// Files streams the rows of the files uploaded into the room, by id.
	Files(ctx context.Context, roomID string, each func(*File) error) error
	// Bans streams the room's bans, by user.
	Bans(ctx context.Context, roomID string, each func(*parley.Ban) error) error
	// Members streams the room's members, by user, with their
	// notification levels (empty for parley.NotifyAll).
	Members(ctx context.Context, roomID string, each func(*Member) error) error
}

// Options selects what Export writes.
type Options struct {
	// Room, when not empty, exports that room alone (and the accounts it
	// names); otherwise the whole server.
	Room string
	// WithSecrets adds the password hashes, the tokens and the API
	// keys.
	WithSecrets bool
	// Source names the store in the header: "sqlite" or "postgres".
	Source string
	// Now is the header's time; default time.Now.
	Now func() time.Time
	// OnFile, when set, is called with each file record before it is
	// written (parley export --files-dir copies its bytes); its error
	// ends the export.
	OnFile func(*File) error
}

// roomPage is how many rooms Export reads a round.
const roomPage = 100

// Export writes src as a parley-export file to w, a record a line, and
// returns what it wrote. It holds one page of rooms at a time (and one
// record of each stream), whatever the size of the data.
func Export(ctx context.Context, src Source, w io.Writer, opt Options) (Counts, error) {
	var c Counts
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	now := time.Now
	if opt.Now != nil {
		now = opt.Now
	}
	h := Header{Format: Format, Version: Version, Type: "header", ExportedAt: now().UTC().Truncate(time.Microsecond),
		Source: opt.Source, Room: opt.Room, WithSecrets: opt.WithSecrets}
	if err := enc.Encode(h); err != nil {
		return c, fmt.Errorf("export: %w", err)
	}
	put := func(l *line, n *int64) error {
		*n++
		return enc.Encode(l)
	}
	err := src.Users(ctx, opt.Room, opt.WithSecrets, func(u *User) error {
		return put(&line{Type: typeUser, User: u}, &c.Users)
	})
	if err == nil && opt.WithSecrets {
		err = src.Tokens(ctx, opt.Room, func(t *Token) error { return put(&line{Type: typeToken, Token: t}, &c.Tokens) })
	}
	if err == nil && opt.WithSecrets {
		err = src.APIKeys(ctx, opt.Room, func(k *APIKey) error { return put(&line{Type: typeAPIKey, APIKey: k}, &c.APIKeys) })
	}
	if err == nil && opt.Room == "" {
		err = src.NameHolds(ctx, func(h *NameHold) error { return put(&line{Type: typeNameHold, NameHold: h}, &c.NameHolds) })
	}
	room := func(r *Room) error {
		if err := put(&line{Type: typeRoom, Room: r}, &c.Rooms); err != nil {
			return err
		}
		id := r.ID
		err := src.Messages(ctx, id, func(m *parley.Message) error { return put(&line{Type: typeMessage, Message: m}, &c.Messages) })
		if err == nil {
			err = src.ChangeKeys(ctx, id, func(k *ChangeKey) error { return put(&line{Type: typeChangeKey, ChangeKey: k}, &c.ChangeKeys) })
		}
		if err == nil {
			err = src.Reactions(ctx, id, func(x *Reaction) error { return put(&line{Type: typeReaction, Reaction: x}, &c.Reactions) })
		}
		if err == nil {
			err = src.Files(ctx, id, func(f *File) error {
				if opt.OnFile != nil {
					if err := opt.OnFile(f); err != nil {
						return err
					}
				}
				return put(&line{Type: typeFile, File: f}, &c.Files)
			})
		}
		if err == nil {
			err = src.Bans(ctx, id, func(b *parley.Ban) error { return put(&line{Type: typeBan, Ban: b}, &c.Bans) })
		}
		if err == nil {
			err = src.Members(ctx, id, func(m *Member) error { return put(&line{Type: typeMember, Member: m}, &c.Members) })
		}
		return err
	}
	if err == nil && opt.Room != "" {
		var r Room
		if r, err = src.Room(ctx, opt.Room); err == nil {
			err = room(&r)
		}
	}
	for after := ""; err == nil && opt.Room == ""; {
		var rooms []Room
		if rooms, err = src.Rooms(ctx, after, roomPage); err != nil || len(rooms) == 0 {
			break
		}
		for i := 0; i < len(rooms) && err == nil; i++ {
			err = room(&rooms[i])
		}
		after = rooms[len(rooms)-1].ID
	}
	if err == nil {
		err = enc.Encode(line{Type: typeEnd, Counts: &c})
	}
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return c, fmt.Errorf("export: %w", err)
	}
	return c, nil
}
