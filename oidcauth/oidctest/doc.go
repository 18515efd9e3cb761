// Package oidctest is a small OpenID provider for tests: discovery, a
// JWKS, an authorization endpoint that signs its fixed user in at once
// (no page), and a token endpoint that checks the client, the code (once)
// and the PKCE verifier, and answers with an RS256 ID token signed by
// go-jose. Knobs make it misbehave (wrong aud, iss or nonce, access
// denied), so that a relying party's refusals can be tested.
package oidctest
