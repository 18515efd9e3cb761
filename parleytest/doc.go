// Package parleytest holds the conformance suites of the root package's
// contracts and the helpers their tests share: every implementation of
// parley.Store (sqlite, postgres, a caching decorator) runs RunStoreTests,
// every Broker RunBrokerTests and every Presence RunPresenceTests, so that
// they all behave alike.
//
// It also holds the test doubles the tests share (Clock, Inbox, Recorder).
// It is test support: only tests import it.
package parleytest
