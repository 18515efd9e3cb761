package chat

import (
	"context"
	"time"

	"parley"
)

// Accounts deletes accounts in the store (sqlite.Store and postgres.Store
// implement it): see DeleteAccount.
type Accounts interface {
	// DeleteUser revokes every token of u, renames the account so that
	// no login finds it, and holds u's name back from registration until
	// holdUntil. Fails with CodeNotFound for an unknown user.
	DeleteUser(ctx context.Context, u parley.User, holdUntil time.Time) error
}

// DefaultNameHold is how long a deleted account's name stays out of reach
// of a new sign-up when Config.NameHold is zero.
const DefaultNameHold = 30 * 24 * time.Hour

// DeleteAccount deletes u's account (DELETE /api/me), once password
// proves it is u's own: every token is revoked, so the live sessions end
// on every node (as LogoutAll); u leaves every room (an owner's leave
// passes the ownership on, and the other members hear a member event);
// u's messages in those rooms are deleted (tombstones, their text erased,
// as DeleteMessage does); last, the store renames the account and holds
// its name back from sign-up for Config.NameHold.
//
// The account goes last so that a deletion that fails half way can be
// asked for again: until then the password still logs in. A session may
// race the deletion meanwhile (a login whose password was checked before
// the rename, a room joined with its token): so after the rename every
// token is revoked again and the rooms are left again. The store makes no
// token and no room for a deleted account (CodeNotFound), so a login
// racing the rename gets none, and nobody opens a direct room with it.
// Messages in rooms u had left before are not touched.
//
// Fails with CodeForbidden for a wrong password (nothing changes), and
// CodeUnavailable when the service has no Config.Accounts.
func (s *Service) DeleteAccount(ctx context.Context, u parley.User, password string) error {
	if s.accounts == nil {
		return parley.Errorf(parley.CodeUnavailable, "account deletion is not available")
	}
	if err := s.checkPassword(ctx, u, password); err != nil {
		return err
	}
	if err := s.logOutAndLeave(ctx, u); err != nil {
		return err
	}
	if err := s.accounts.DeleteUser(ctx, u, s.now().Add(s.nameHold)); err != nil {
		return err
	}
	// What a session that raced the deletion did before the rename.
	return s.logOutAndLeave(ctx, u)
}

// logOutAndLeave revokes every token of u, then, in each of u's rooms,
// deletes u's messages and leaves.
func (s *Service) logOutAndLeave(ctx context.Context, u parley.User) error {
	if err := s.LogoutAll(ctx, u.ID); err != nil {
		return err
	}
	ms, err := s.store.Memberships(ctx, u.ID)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if err := s.deleteOwnMessages(ctx, u, m.RoomID); err != nil {
			return err
		}
		if _, err := s.store.Leave(ctx, m.RoomID, u.ID); err != nil {
			return err
		}
	}
	return nil
}

// VerifyPassword checks that password is u's: CodeForbidden when it is
// not. DELETE /api/me checks it first, under the login limits.
func (s *Service) VerifyPassword(ctx context.Context, u parley.User, password string) error {
	return s.checkPassword(ctx, u, password)
}

// checkPassword checks that password is u's: CodeForbidden when it is
// not (not CodeUnauthorized: the caller's token is good, and a client
// that hears 401 drops it).
func (s *Service) checkPassword(ctx context.Context, u parley.User, password string) error {
	wrong := parley.Errorf(parley.CodeForbidden, "wrong password")
	if len(password) > MaxPassword {
		return wrong
	}
	found, ok, err := s.passwordMatches(ctx, u.Name, password)
	if err != nil {
		return err
	}
	if !ok || found.ID != u.ID {
		return wrong
	}
	return nil
}

// deleteOwnMessages tombstones every message u sent in the room that is
// not deleted yet, a page of the history at a time.
func (s *Service) deleteOwnMessages(ctx context.Context, u parley.User, roomID string) error {
	return s.ExportMessages(ctx, u, roomID, func(m *parley.Message) error {
		if m.Deleted() {
			return nil
		}
		_, _, err := s.store.DeleteMessage(ctx, parley.Deletion{RoomID: roomID, Seq: m.Seq, ActorID: u.ID})
		return err
	})
}
