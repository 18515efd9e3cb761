// Package jwtauth verifies JSON Web Tokens from an identity provider, so
// that a user signed in elsewhere can use Parley with the provider's token
// in place of a Parley access token (JWT sign-in).
//
// A Verifier checks a token's signature with an HS256 shared secret or a
// public key from a JWKS URL (RS256, ES256, EdDSA), against algorithms
// pinned by configuration, then its iss, aud, exp and nbf, and returns the
// Identity it names: issuer, subject, a display name and the expiry. The
// JOSE work (parsing, signatures, keys) is go-jose's; this package adds
// the policy and the key set's cache: fetched at start, refreshed
// periodically, and refetched at most once a minute for an unknown key id.
//
// It imports nothing of the project: package chat maps its refusals to
// parley's unauthorized.
package jwtauth
