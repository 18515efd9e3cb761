// Package retention deletes the messages older than the server's retention
// (design §3b "Data"): a sweeper goroutine that, on each tick, finds the
// expired messages of a store (parley.Expiry) in bounded batches and
// deletes each as a moderator would (parley.Store.DeleteMessage), so that
// every cache, the search index and the change stream learn it as they
// learn any deletion.
package retention
