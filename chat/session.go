package chat

import (
	"context"

	"parley"
)

// AuthenticateToken is Authenticate that also returns the stored token
// (its Hash and ExpiresAt; for a JWT its hash and exp), so that a transport holding a session open on
// the token can end it when the token expires or is revoked. It fails with
// CodeUnauthorized for a missing, unknown or expired token.
func (s *Service) AuthenticateToken(ctx context.Context, token string) (parley.User, parley.Token, error) {
	if token == "" {
		return parley.User{}, parley.Token{}, parley.Errorf(parley.CodeUnauthorized, "missing access token")
	}
	if s.isJWT(token) {
		return s.authenticateJWT(ctx, token)
	}
	if parley.IsAPIKey(token) {
		return s.authenticateKey(ctx, token)
	}
	u, t, err := s.store.TokenUser(ctx, tokenHash(token), s.now())
	if err != nil {
		return parley.User{}, parley.Token{}, err
	}
	return u, t, nil
}
