// Package chat is Parley's application service: the operations users ask
// for, with their validation and authorization, shared by every transport
// (rest for JSON over HTTP, gateway for STOMP). Service covers accounts
// (Register, Login, Logout, and LogoutAll, which revokes every token of
// the user), rooms (create, update, join, leave, members), messages (send,
// edit, delete, history, the changes since a seq), search (every room of
// the user, or one), read positions, and moderation (Remove, with or
// without a ban, Unban, SetRole, Bans).
//
// Invariants: a call is authorized against the caller's membership and
// role before it reaches a write; what it refuses is a *parley.Error with
// a code.
//
// It imports only the domain package: it knows nothing of HTTP, STOMP or
// which store it talks to.
package chat
