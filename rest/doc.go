// Package rest serves Parley's JSON API over HTTP (design §3) under /api/:
// accounts (sign-up, login, logout, revoking every token), rooms,
// membership, history and the changes since a seq, sending, editing and
// deleting, search, people and moderation (remove, ban, unban, roles), and
// the OpenAPI description. Limits: an optional per-user limit on sends,
// and limits on sign-ups and failed logins per client address and name.
// Encoded room lists and history pages are memoized until they change.
//
// Invariants: parley error codes map to HTTP statuses in one place
// (errorStatus); a client's address is taken from forwarding headers only
// from Config's trusted proxies.
//
// It imports the domain package and chat, and no backend or gateway.
package rest
