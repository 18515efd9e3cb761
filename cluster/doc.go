// Package cluster relays committed changes between the nodes of a Parley
// cluster (design §6): for each message this node commits, it delivers to
// the local sessions and publishes one batch per other node that holds
// online recipients (seed 002), and it hands the batches other nodes send
// here to the local fan-out, in seq order, each message once.
//
// # Send side
//
// The store's commit events (Apply) go to a queue that one goroutine
// drains in commit order. For a message it looks up the room's route: the
// members (from the store, cached per room until a join or leave) and the
// nodes that hold their sessions (from parley.Presence), cached per room
// and dropped on every presence change the change hook reports, and after
// Config.RouteTTL at the latest. Each user's nodes are remembered too, and
// forgotten on that user's changes only, so a route is rebuilt by reading
// presence for the users who changed. It then publishes one parley.Batch to each
// other node of the route, with the members on that node, and none to a
// node without online members. Joins and leaves travel the same way, to
// the room's nodes and the user's nodes, so that every node drops its
// cached members and a leave ends the user's room subscriptions there too.
//
// The run goroutine delivers a commit to the local sessions at once, and
// hands its batches and its rooms' heads to the sender goroutine
// (send.go), which publishes them in commit order once the shared hot data
// holds the commit (Config.Written): a client on another node that hears
// of a message and then reads the room list or the newest page from Redis
// finds it there. The hot data gives up on a write after its timeout, so a
// Redis outage delays the publishes, never stops them.
//
// # Receive side: order and duplicates
//
// Messages of a room reach a node from several publishers (one per node
// that commits to the room) and from its own commits, so they can arrive
// out of seq order, and a reconnect can bring one twice. The relay keeps,
// per room, the next seq it will deliver: an older seq is a duplicate and
// is dropped; a newer one is held until the gap closes. If the gap has not
// closed after Config.GapWait (the message went to no batch for this node,
// or a batch was lost), the relay reads from the store everything missing
// up to the newest held message, page by page, delivering the held
// messages as it reaches them, and goes on while the store brings the next
// seq; only a gap that 20 GapWaits of retries could not narrow is skipped
// (the clients see it as a seq gap and fill it with since-seq). A held
// message rarely waits for the timer, whichever node committed it: its
// commit proves the store has every older seq of the room, so the gap
// below it is read from the store at once (in a room it delivers: the
// first message of a room never seen waits, as below), on a goroutine of
// its own while the batches on their way go on arriving; whichever brings
// the missing seqs first closes the gap, and the timer is left for a read
// that fails. Receive
// returns (and the broker acknowledges the batch) only once its message is
// delivered, held or dropped, so the broker's prefetch bounds the batches
// waiting here. The first
// message of a room the node has not seen is held for GapWait too (unless
// it is seq 1), so that an older one still on its way is not overtaken.
// Then delivery starts after the position of the room's local topic
// subscribers (Config.Subscribed: a live-only one is placed at the room's
// last seq when it subscribed, hub.Hub.LiveAfter), the missing seqs read
// from the store, so that batches later than GapWait lose them nothing;
// only when no position is known does it start at the held message, and
// an older seq that comes later is dropped and counted
// (parley_cluster_before_start_total).
//
// # Failures
//
// When presence or the store cannot be read, the relay uses the last route
// it had, even one a join, a leave or a presence change dropped (cut to the
// room's current members), or delivers locally only, and counts the
// failure; remote clients it missed then see a seq gap. While Redis's
// change channel is down the cached routes are kept, and the subscription
// confirmed again afterwards drops them all. A batch returned as undeliverable means its node is
// gone: the relay drops that node's presence entries (at most once a
// second per node).
//
// A hung Redis is the same failure, sooner: cmd/parley puts a breaker on
// the Redis client (redis.Health) that fails presence reads, head writes
// and the hot data's wait (Config.Written) at once while Redis does not
// answer, so the relay publishes without waiting and routes to every
// known node; a failed presence read is logged once a spell.
//
// While routes are unsure (for Config.Settle after presence could not be
// read or was reset: PresenceReset) a message goes to every known node,
// those seen in a route or listed live by Config.Nodes, rather than to the
// nodes of a route read from a presence that may be empty.
//
// # Heads: what no batch brought
//
// A batch that was never sent (the broker's backlog overflowed, the
// sender died before RabbitMQ came back, presence was empty) is never
// sent again, and a quiet room has no next message to reveal the gap. So
// each commit of this node also moves the room's head (Config.Heads, the
// seq of its last message, forward only; a write that fails is retried),
// and the keeper goroutine compares the heads of the rooms the relay
// delivers with what it delivered: on CheckHeads (the broker reconnected,
// presence was reset, a node is gone), at Start, and every
// Config.HeadCheck. A room whose head is past it is read from the store
// up to the head, so every node learns a room's last seq within about a
// HeadCheck of a fault healing. The rooms with local topic subscribers
// that the relay has never delivered (Config.Subscribed: their first
// messages were lost) are checked too, and filled from the subscribers'
// lowest position (see startAt).
package cluster
