// Package oidcauth is Parley's side of OpenID Connect sign-in (the
// relying party): the authorization code flow with PKCE (S256), a state
// and a nonce, against a provider found by discovery. The state, the
// nonce and the PKCE verifier travel in a value the browser keeps (a
// cookie set by package rest), signed with HMAC-SHA256, so that any node
// of a cluster that shares the key can finish a sign-in another began.
// The OAuth 2.0 and OpenID work (discovery, the code exchange, the ID
// token's signature, iss, aud and exp) is go-oidc's and x/oauth2's.
package oidcauth
