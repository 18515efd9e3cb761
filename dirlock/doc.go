// Package dirlock lets one process at a time own a directory: Acquire takes
// an exclusive lock on a file in it, held until Close or the end of the
// process (the kernel releases it on a crash, so a stale lock never needs
// cleaning up), and records the holder's pid there so that a second
// process is told who has it.
//
// It imports nothing of the project.
package dirlock
