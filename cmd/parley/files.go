package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"parley"
	"parley/chat"
	"parley/files"
)

// Files and attachments (docs/files.md): the rows in the store, the
// bytes in a directory under --data (one node) or in an S3-compatible
// bucket (required in cluster mode).

// filesConfig is the files' settings.
type filesConfig struct {
	MaxSize       int64         // largest file, bytes; 0: files off
	Quota         int64         // most bytes of one user's files
	UnattachedTTL time.Duration // how long an upload waits for a message
	SweepEvery    time.Duration // time between the sweeper's passes
	S3Endpoint    string        // https://host:port of an S3-compatible store; "": the directory
	S3Bucket      string
	S3AccessKey   string
	S3SecretKey   string // or from S3SecretFile
	S3SecretFile  string
	S3Region      string
}

func (c *filesConfig) flags(fs *flag.FlagSet) {
	fs.Int64Var(&c.MaxSize, "files-max-size", chat.DefaultFileMaxSize, "largest uploaded file in bytes, else 413 (0: no files: uploads and sends with files answer 503)")
	fs.Int64Var(&c.Quota, "files-quota", chat.DefaultFileQuota, "most bytes one user's stored files may total, else 413 (an upload is checked against it exactly, under any concurrency)")
	fs.DurationVar(&c.UnattachedTTL, "files-unattached-ttl", chat.DefaultUnattachedTTL, "how long an upload no message carries is kept before the sweeper deletes it")
	fs.DurationVar(&c.SweepEvery, "files-sweep", chat.DefaultFileSweepEvery, "time between the file sweeper's passes (files of deleted, expired and erased messages, unattached uploads, blobs without a row)")
	fs.StringVar(&c.S3Endpoint, "files-s3-endpoint", "", "keep files in this S3-compatible object store, http(s)://host:port (empty: in the files directory under --data)")
	fs.StringVar(&c.S3Bucket, "files-s3-bucket", "parley-files", "with --files-s3-endpoint: the bucket (made when missing)")
	fs.StringVar(&c.S3AccessKey, "files-s3-access-key", "", "with --files-s3-endpoint: the access key")
	fs.StringVar(&c.S3SecretKey, "files-s3-secret-key", "", "with --files-s3-endpoint: the secret key (prefer PARLEY_FILES_S3_SECRET_KEY or --files-s3-secret-key-file to the command line)")
	fs.StringVar(&c.S3SecretFile, "files-s3-secret-key-file", "", "with --files-s3-endpoint: file holding the secret key (a final newline is not part of it)")
	fs.StringVar(&c.S3Region, "files-s3-region", "us-east-1", "with --files-s3-endpoint: the region")
}

// fileStoreOf is what keeps the files' rows in db: the SQLite store; nil
// for another.
func fileStoreOf(db parley.Store) chat.FileStore {
	f, _ := db.(chat.FileStore)
	return f
}

// openFiles returns the chat service's files configuration: nil when
// files are off: --files-max-size 0, or cluster mode without
// --files-s3-endpoint (the node logs why; uploads answer 503).
func (m *Main) openFiles(ctx context.Context, db parley.Store) (*chat.FilesConfig, error) {
	c := m.Config.Files
	switch {
	case c.MaxSize < 0:
		return nil, fmt.Errorf("--files-max-size %d: want 0 (no files) or more", c.MaxSize)
	case c.Quota < 0:
		return nil, fmt.Errorf("--files-quota %d: want 0 (the default) or more", c.Quota)
	case c.MaxSize == 0:
		return nil, nil
	}
	st := fileStoreOf(db)
	switch {
	case st == nil:
		return nil, fmt.Errorf("files: the store %T keeps no files; set --files-max-size 0", db)
	case isPostgres(m.Config.Store) && c.S3Endpoint == "":
		// Cluster mode: a file uploaded through one node is downloaded
		// through any, so the bytes need a store every node reaches.
		slog.Warn("files are off: in cluster mode they need a shared object store, --files-s3-endpoint (docs/files.md)")
		return nil, nil
	}
	var blobs files.Blobs
	if c.S3Endpoint != "" {
		s3, err := c.openS3(ctx)
		if err != nil {
			return nil, err
		}
		blobs = s3
	} else {
		dir, err := files.OpenDir(filepath.Join(m.Config.Data, "files"))
		if err != nil {
			return nil, err
		}
		blobs = dir
	}
	return &chat.FilesConfig{Store: st, Blobs: blobs, MaxSize: c.MaxSize, Quota: c.Quota, UnattachedTTL: c.UnattachedTTL}, nil
}

// openS3 connects to the object store of --files-s3-endpoint.
func (c *filesConfig) openS3(ctx context.Context) (*files.S3, error) {
	secret := c.S3SecretKey
	if c.S3SecretFile != "" {
		b, err := os.ReadFile(c.S3SecretFile)
		if err != nil {
			return nil, fmt.Errorf("--files-s3-secret-key-file: %w", err)
		}
		secret = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	}
	s3, err := files.OpenS3(ctx, files.S3Config{
		Endpoint: c.S3Endpoint, Bucket: c.S3Bucket, AccessKey: c.S3AccessKey, SecretKey: secret, Region: c.S3Region,
	})
	if err != nil {
		return nil, fmt.Errorf("--files-s3-endpoint: %w", err)
	}
	return s3, nil
}
