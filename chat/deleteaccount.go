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
	// RenameSender shows message seq of the room, sent by senderID,
	// under name (a new change of the room, with its event); another's
	// message or one already under name is left as it is. Fails with
	// CodeNotFound for an unknown message.
	RenameSender(ctx context.Context, roomID string, seq int64, senderID, name string) (parley.Message, error)
	// SenderRooms returns the rooms holding messages of userID, member or
	// not.
	SenderRooms(ctx context.Context, userID string) ([]string, error)
}

// DeletedSenderName is the name a deleted account's messages are shown
// under, in place of the account's name, when the operator keeps them
// (Config.KeepMessages), and on their tombstones otherwise.
const DeletedSenderName = "Deleted user"

// DefaultSignInWindow is Config.SignInWindow's default: an account with
// no password is deleted with the token of a sign-in at most this old.
const DefaultSignInWindow = 10 * time.Minute

// DefaultNameHold is how long a deleted account's name stays out of reach
// of a new sign-up when Config.NameHold is zero.
const DefaultNameHold = 30 * 24 * time.Hour

// DeleteAccount deletes u's account (DELETE /api/me), once password
// proves it is u's own: every token is revoked, so the live sessions end
// on every node (as LogoutAll); u leaves every room (an owner's leave
// passes the ownership on, and the other members hear a member event);
// in every room u ever wrote in (those left before too), u's messages are
// deleted (tombstones, their text erased, as DeleteMessage does) or, when
// the operator keeps them (Config.KeepMessages), stay as they are; either
// way they, and u's earlier tombstones, are shown under DeletedSenderName
// from then on, so u's name is nowhere in the history; last, the store
// renames the account and holds its name back from sign-up for
// Config.NameHold. Each of these is a change of its room, whose events
// tell caches, members and the change stream.
//
// The account goes last so that a deletion that fails half way can be
// asked for again: until then the password still logs in. A session may
// race the deletion meanwhile (a login whose password was checked before
// the rename, a room joined with its token): so after the rename every
// token is revoked again and the rooms are left again. The store makes no
// token and no room for a deleted account (CodeNotFound), so a login
// racing the rename gets none, and nobody opens a direct room with it.
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
	return s.deleteAccount(ctx, u)
}

// DeleteAccountSignedIn deletes u's account as DeleteAccount does, for
// an account with no password (an outside identity's, IsExternalUser):
// in the password's place, token (u's, the request's own) must come from
// a sign-in made within Config.SignInWindow. For a Parley token, made by
// an OpenID Connect sign-in (LoginExternal), that is when it was made;
// for a JWT, its auth_time, else its iat (a JWT with neither cannot
// show it, nor one dated more than Config.SignInLeeway after the
// server's now; one dated ahead by at most that counts as made now).
// Fails with CodeForbidden "sign in again to delete this account" for an
// older sign-in or one dated too far ahead, and for a password account
// (whose deletion takes the password), changing nothing.
func (s *Service) DeleteAccountSignedIn(ctx context.Context, u parley.User, token string) error {
	if s.accounts == nil {
		return parley.Errorf(parley.CodeUnavailable, "account deletion is not available")
	}
	if !IsExternalUser(u.ID) {
		return parley.Errorf(parley.CodeForbidden, "wrong password: this account has one, and its deletion takes it")
	}
	tu, t, err := s.AuthenticateToken(ctx, token)
	if err != nil {
		return err
	}
	if tu.ID != u.ID {
		return parley.Errorf(parley.CodeForbidden, "the token is not this account's")
	}
	if t.CreatedAt.IsZero() {
		return parley.Errorf(parley.CodeForbidden, "sign in again to delete this account: this token does not say when its sign-in was (a JWT needs an auth_time or iat claim)")
	}
	if now := s.now(); t.CreatedAt.After(now.Add(s.leeway)) {
		return parley.Errorf(parley.CodeForbidden, "sign in again to delete this account: the sign-in behind this token is dated %v, more than %v ahead of this server's clock (check the identity provider's clock)", t.CreatedAt.UTC().Format(time.RFC3339), s.leeway)
	}
	if !s.signedInRecently(t) {
		return parley.Errorf(parley.CodeForbidden, "sign in again to delete this account: the sign-in behind this token is older than %v", s.signedIn)
	}
	return s.deleteAccount(ctx, u)
}

// signedInRecently reports whether t's sign-in (its CreatedAt) is within
// Config.SignInWindow before now; a token that does not say when is not,
// nor one dated more than Config.SignInLeeway after now (a skewed clock
// or a forged auth_time would otherwise stay recent for as long as it is
// ahead); one dated ahead by at most the leeway counts as made now.
func (s *Service) signedInRecently(t parley.Token) bool {
	age := s.now().Sub(t.CreatedAt)
	return !t.CreatedAt.IsZero() && age >= -s.leeway && age <= s.signedIn
}

// deleteAccount is DeleteAccount once the account is proven u's.
func (s *Service) deleteAccount(ctx context.Context, u parley.User) error {
	if err := s.logOutAndLeave(ctx, u); err != nil {
		return err
	}
	if err := s.accounts.DeleteUser(ctx, u, s.now().Add(s.nameHold)); err != nil {
		return err
	}
	// What a session that raced the deletion did before the rename.
	if err := s.logOutAndLeave(ctx, u); err != nil {
		return err
	}
	rooms, err := s.accounts.SenderRooms(ctx, u.ID)
	if err != nil {
		return err
	}
	for _, id := range rooms {
		if err := s.forgetMessages(ctx, u, id); err != nil {
			return err
		}
	}
	return nil
}

// logOutAndLeave revokes every token of u, then, in each of u's rooms,
// forgets u's messages and leaves.
func (s *Service) logOutAndLeave(ctx context.Context, u parley.User) error {
	if err := s.LogoutAll(ctx, u.ID); err != nil {
		return err
	}
	ms, err := s.store.Memberships(ctx, u.ID)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if err := s.forgetMessages(ctx, u, m.RoomID); err != nil {
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
	if IsExternalUser(u.ID) {
		return errNoPassword()
	}
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

// forgetMessages tombstones every message u sent in the room that is not
// deleted yet, unless the operator keeps them, and shows each, tombstones
// included, under DeletedSenderName, a page of the history at a time.
func (s *Service) forgetMessages(ctx context.Context, u parley.User, roomID string) error {
	err := s.eachSent(ctx, u, roomID, func(m *parley.Message) error {
		if !s.keep && !m.Deleted() {
			if _, _, err := s.store.DeleteMessage(ctx, parley.Deletion{RoomID: roomID, Seq: m.Seq, ActorID: u.ID}); err != nil {
				return err
			}
			if m.Files != "" {
				s.deleteMessageFiles(ctx, roomID, m.Seq) // files.go; the sweeper covers a crash before
			}
		}
		if m.SenderName == DeletedSenderName {
			return nil
		}
		_, err := s.accounts.RenameSender(ctx, roomID, m.Seq, u.ID, DeletedSenderName)
		return err
	})
	if parley.ErrorCode(err) == parley.CodeNotFound {
		return nil // the room is gone
	}
	return err
}
