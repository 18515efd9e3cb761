package parley

import "context"

// Presence is the cluster's map from a user to the nodes that hold the
// user's sessions (seed 002's ws:user:{id} -> serverId, with several nodes
// per user). Each node has one Presence, made with its node id, a heartbeat
// and a hook that hears about changes made by any node (see the
// implementations' configs). An entry lives for a TTL that the owning
// node's heartbeat refreshes, so the entries of a node that died expire on
// their own; the heartbeats of the live nodes then remove them and tell the
// change hooks (userID ""), within one TTL and one heartbeat of the death,
// so that nobody keeps routing to a dead node from a cache.
//
// All methods are safe for concurrent use.
type Presence interface {
	// Add records one more session of userID on this node. The first one
	// makes the user present on this node and tells every node's change
	// hook. When the backend is unreachable the session is still counted
	// and Add fails with CodeUnavailable; the heartbeat registers it once
	// the backend is back.
	Add(ctx context.Context, userID string) error
	// Remove records the end of one session of userID on this node. The
	// last one removes the user from this node and tells the change hooks.
	// Removing a session that was never added changes nothing. Fails with
	// CodeUnavailable when the backend is unreachable (the entry then
	// expires after its TTL).
	Remove(ctx context.Context, userID string) error
	// Nodes returns, for each of userIDs present somewhere, the ids of the
	// nodes holding its sessions, this node included; absent users have no
	// key. An entry whose TTL has passed is never returned. Fails with
	// CodeUnavailable when the backend is unreachable.
	Nodes(ctx context.Context, userIDs []string) (map[string][]string, error)
	// DropNode removes every entry of node, which is known to be gone (its
	// broker queue no longer exists), and tells the change hooks. If the
	// node is in fact alive, its next heartbeat restores its entries.
	// Fails with CodeUnavailable when the backend is unreachable.
	DropNode(ctx context.Context, node string) error
	// Ping checks that the backend is reachable: CodeUnavailable if not.
	Ping(ctx context.Context) error
	// Close stops the heartbeat and removes this node's entries.
	Close() error
}

// PresenceHook hears about presence changes made by any node of the
// cluster: userID's set of nodes changed, or, when userID is "", any entry
// may have changed (a node was dropped, the backend was reset or the
// notifications were interrupted). It may run on any goroutine; it must not
// block nor call back into the Presence.
type PresenceHook func(userID string)
