// Package pgtest gives a test an empty PostgreSQL schema of its own on the
// database that PARLEY_TEST_POSTGRES names, so that the store, hot data and
// cluster tests can share one database without seeing each other's rows.
package pgtest
