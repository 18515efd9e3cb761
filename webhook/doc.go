// Package webhook delivers outgoing webhooks (design §3b "Webhooks"):
// each event of a room (a message sent, edited or deleted) is POSTed to
// every webhook that asked for its kind, signed with the webhook's secret
// (Sign, Verify), at least once and in the room's order, retried with
// exponential backoff and jitter, and paused after too many failures.
//
// The events are read from the store, not from the commit callbacks: a
// webhook's position in each room (parley.HookPosition, stored) is how far
// it has delivered, so a restart, a crash or a receiver that is down
// loses nothing; delivery resumes from the stored position. In a cluster
// every node runs a Manager and one node at a time delivers each webhook,
// the holder of its lease (parley.HookLease), whose token fences every
// position move; a dead node's lease expires after Config.LeaseTTL and
// another node takes over from the stored positions.
//
// Targets are filtered at connect time (Filter): loopback, private,
// link-local, unspecified and multicast addresses are refused unless
// allow-listed, whatever the URL's host resolves to; redirects are never
// followed. docs/webhooks.md has the design, its costs and the receiver's
// check.
package webhook
