// Package gateway serves STOMP sessions (design §4) over WebSocket at /ws
// and over raw TCP, with the same session code: authentication on CONNECT,
// heart-beats, room and personal-queue subscriptions with resume, SEND
// through the chat service with a RECEIPT after commit, and an ERROR then a
// close for every refusal.
//
// # Memory and batching
//
// An idle session holds no goroutine and no buffer. Its socket sits in an
// epoll set (poll_linux.go); when it turns readable, one goroutine is started
// for it, takes pooled read buffers, decodes and handles every complete
// frame, gives the buffers back and re-arms the socket. Only a frame that
// arrives in pieces makes that goroutine wait for the rest.
//
// Outbound frames go to a bounded queue per session (frames and bytes). A
// session with frames queued waits in the line of the server's writer
// pool (writers.go, Config.Writers goroutines): the worker whose turn it
// is takes everything queued, encodes it into the worker's buffer and
// writes it with one system call, without waiting for the client; a
// socket that does not take it all gets the rest written by a goroutine of
// the session's own, so no client holds up another. A message is encoded
// once per frame shape (destination, protocol version, ack mode) and
// shared by every recipient of that shape;
// only the subscription header is written per recipient. A full queue closes
// the session with ERROR "slow consumer" (slowConsumerLocked, the one place that
// decides it), so nothing is dropped silently: the client reconnects and
// resumes with since-seq.
//
// # Limits
//
// What a client may cost is set by the server, never by the client: a
// frame must arrive within FrameTimeout whatever heart-beat was asked for,
// and a heart-beat above MaxHeartBeat is taken as MaxHeartBeat. A user's
// SEND budget (SendRate, SendBurst) is shared by all of the user's
// connections to the node, and a user holds at most MaxConnsPerUser of
// them (users.go); the node holds at most MaxConns. The kernel holds at
// most SendBuffer (doubled by Linux) for a client that stops reading, so
// that the outbound queue's bound is what finds it. A revoked or expired
// token ends the sessions it opened (Revoke, expire).
//
// # Locks
//
// hub.Hub's lock is taken before a session's (the hub delivers with its lock
// held); a session never calls into the hub while holding its own lock.
// A session's lock may be held while the writer pool's (a leaf) is taken.
// Server.mu is never held while taking either.
//
// # Shutdown
//
// Shutdown keeps design §2's promise (stop accepting, flush queues, close
// sockets with a reconnect hint, finish in-flight writes) in this order:
//
//  1. It stops accepting: listeners close, new WebSocket upgrades get 503
//     and add refuses sessions that race with it.
//  2. It cancels Server.ctx, which ends what need not finish: catch-ups
//     (since-seq replays), and CONNECT and SUBSCRIBE checks, which are
//     answered with the going-away ERROR. Sends do not run under it.
//  3. It marks every session draining: no new frame is acted on. A session
//     that is not handling a frame gets the going-away ERROR at once,
//     after whatever is queued for it. A session handling a frame (a SEND
//     waiting for its commit, typically) finishes it first: the SEND
//     commits within its SendTimeout, its RECEIPT is queued, and only then
//     does the going-away ERROR follow. Frames read after that are never
//     acted on; the client sends them again on the next connection.
//  4. It waits until every session has written its last frames and closed.
//  5. If its ctx ends first, it cancels the sends still waiting (the store
//     drops a write it has not started; see groupcommit) and each is
//     refused as unavailable, "send again with the same client-id", and
//     forces the rest: writes stop waiting for clients (session.write), so
//     every session closes without waiting on its peer. Shutdown then only
//     waits for the chat service to return from the cancelled sends, which
//     it does as soon as a write already committing is done.
//
// The session's busy and draining fields, both under session.mu, decide
// between "going away now" and "going away after this frame" without a
// race: a frame is begun only while the session is not draining, and
// Shutdown marks every session draining before it refuses any, so a
// client that got the going-away ERROR knows that no session takes new
// frames any more.
package gateway
