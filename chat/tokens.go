package chat

import "context"

// Logout revokes the access token: from the moment it returns the token is
// refused everywhere (the store sees to its caches, and in cluster mode to
// every node's), and Config.OnRevoke ends the live sessions it opened.
// Fails with CodeUnauthorized for a missing, unknown or expired token,
// and CodeInvalid for a JWT: Parley cannot revoke it (jwt.go).
func (s *Service) Logout(ctx context.Context, token string) error {
	u, err := s.Authenticate(ctx, token)
	if err != nil {
		return err
	}
	if s.isJWT(token) {
		return errJWTRevoke()
	}
	hash := tokenHash(token)
	if err := s.store.RevokeToken(ctx, hash); err != nil {
		return err
	}
	if s.onRevoke != nil {
		s.onRevoke(u.ID, hash)
	}
	return nil
}

// LogoutAll revokes every access token of the user (log out everywhere),
// as Logout does one.
func (s *Service) LogoutAll(ctx context.Context, userID string) error {
	if err := s.store.RevokeUserTokens(ctx, userID); err != nil {
		return err
	}
	if s.onRevoke != nil {
		s.onRevoke(userID, nil)
	}
	return nil
}
