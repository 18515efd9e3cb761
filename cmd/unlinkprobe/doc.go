// Command unlinkprobe measures what deleting a file costs the fsyncs of
// other files on the same filesystem: a probe writes 4 KiB and fdatasyncs
// a file of its own every 2 ms, for a second with nothing else going on,
// then for a second in which a file of each size is deleted. On ext4
// mounted with online discard, freeing the blocks stalls every fdatasync
// on the filesystem for as long (docs/operations.md, "Backups"; the
// reason the SQLite checkpointer cuts a grown WAL back a step at a time).
//
// Usage:
//
//	go run ./cmd/unlinkprobe -dir DIR [-sizes 4,16,64] [-rounds 4]
//
// DIR must be on the filesystem to measure (the data directory's); the
// probe writes there and removes what it wrote. It prints, per round, the
// probe's p50, p99 and longest fdatasync and the unlink's own time.
package main
