// Package parleytest holds the conformance suites of the root package's
// contracts and the helpers their tests share: every implementation of
// parley.Store (sqlite, postgres, a caching decorator) runs RunStoreTests,
// every Broker RunBrokerTests and every Presence RunPresenceTests, so that
// they all behave alike.
package parleytest
