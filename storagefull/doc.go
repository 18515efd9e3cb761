// Package storagefull is the state a store keeps while its storage is
// full: it refuses each write with one unavailable error, logs once when
// the refusals start and once when they end, counts them
// (parley_store_full_total, by writer: a request or the search
// indexer) and shows the state (parley_store_full, and
// State for /readyz). The sqlite and postgres stores each keep one; it
// knows nothing of either, and imports only the domain package.
//
// Concurrency: a State is safe for concurrent use; its mutex guards the
// spell's start, last refusal and count, and is a leaf (LOCKS.md).
package storagefull
