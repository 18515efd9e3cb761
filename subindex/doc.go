// Package subindex is the subscription index the hub and the room events
// share: a node's subscriptions by key (a room id for a room's topic, a
// user id for a personal queue), with O(1) registration and removal.
//
// It holds no lock: its owner's lock guards an Index and every position in
// it. It imports nothing but the standard library, so that both packages
// that fan out to subscribers (hub, roomevents) can use it without
// depending on each other.
package subindex
