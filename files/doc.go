// Package files keeps the bytes of uploaded files (docs/files.md): a Blobs
// store with two implementations, Dir (a directory under --data, one
// node) and S3 (an S3-compatible object store, shared by a cluster's
// nodes), and the checks an upload passes before it is kept: the type
// sniffed from the bytes (Sniff), a safe name (CleanName), and for an
// image a bounded decode and a small preview (Preview).
package files
