// Package gateway serves STOMP sessions (design §4) over WebSocket at /ws
// and over raw TCP, with the same session code: authentication on CONNECT,
// heart-beats, room, personal-queue and event subscriptions with resume,
// SEND (and edits, deletions, typing) through the chat service with
// a RECEIPT after commit, the ending of revoked or expired sessions
// (Revoke), and an ERROR then a close for every refusal. Shutdown drains
// every session.
//
// Invariants: an idle session holds no goroutine and no buffer; a message
// is encoded once per frame shape; a full outbound queue closes its session
// with ERROR "slow consumer" (slowConsumerLocked, the one place), never a
// silent drop; what a client may cost (frame timeout, heart-beat, send
// budget, connections) is set by the server. Lock order: LOCKS.md.
//
// It imports the domain package, stomp, accept, hub, roomevents and
// ratelimit, and no backend. docs/architecture.md ("gateway") has the design: memory and
// batching, limits, the shutdown sequence.
package gateway
