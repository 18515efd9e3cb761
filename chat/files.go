package chat

import (
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"parley"
	"parley/files"
)

// Files and attachments (design §3b "Files"; docs/files.md). A member
// uploads a file into a room (Upload); it is theirs, unattached, until a
// message of theirs in that room carries it (SendFiles). Only the room's
// members download it (OpenFile), and only the uploader while it is
// unattached. Deleting the message deletes its files; the sweeper
// (StartFileSweep) removes what a crash, retention or an account
// deletion left behind, and uploads never attached.

// FileStore keeps the files' rows (sqlite.Store implements it).
type FileStore interface {
	// CreateFile stores f when its uploader's files total, with f, at
	// most quota bytes (exactly, under any concurrency); CodeTooLarge
	// otherwise.
	CreateFile(ctx context.Context, f parley.StoredFile, quota int64) error
	// File returns the file of id; CodeNotFound for an unknown one.
	File(ctx context.Context, id string) (parley.StoredFile, error)
	// ClaimFiles claims for a send the files of ids that uploader put in
	// roomID and nothing carries or claims (or claim claimed before),
	// and returns those it claimed.
	ClaimFiles(ctx context.Context, roomID, uploader, claim string, ids []string) ([]parley.StoredFile, error)
	// ReleaseFiles lets go of the unattached files claimed under claim.
	ReleaseFiles(ctx context.Context, claim string) error
	// AttachFiles records that message seq carries the files of claim.
	AttachFiles(ctx context.Context, claim string, seq int64) error
	// DeleteMessageFiles deletes and returns the rows of the files of
	// message seq of roomID.
	DeleteMessageFiles(ctx context.Context, roomID string, seq int64) ([]parley.StoredFile, error)
	// SweepFiles deletes and returns the rows of orphaned files (see
	// sqlite.Store.SweepFiles).
	SweepFiles(ctx context.Context, unattachedBefore time.Time) ([]parley.StoredFile, error)
	// FilesKnown returns which of ids have a row.
	FilesKnown(ctx context.Context, ids []string) (map[string]bool, error)
	// UploaderFiles returns the files uploader uploaded, oldest first.
	UploaderFiles(ctx context.Context, uploader string) ([]parley.StoredFile, error)
}

// FilesConfig configures files (Config.Files).
type FilesConfig struct {
	// Store keeps the rows (required).
	Store FileStore
	// Blobs keeps the bytes (required).
	Blobs files.Blobs
	// MaxSize is the largest file, in bytes. Default DefaultFileMaxSize.
	MaxSize int64
	// Quota is the most bytes a user's files may total. Default
	// DefaultFileQuota.
	Quota int64
	// UnattachedTTL is how long an upload may wait for a message before
	// the sweeper removes it. Default DefaultUnattachedTTL.
	UnattachedTTL time.Duration
}

// Defaults of FilesConfig.
const (
	DefaultFileMaxSize   = 10 << 20
	DefaultFileQuota     = 1 << 30
	DefaultUnattachedTTL = 24 * time.Hour
)

// previewKey is the blob key of a file's preview.
func previewKey(id string) string { return id + ".p" }

func errNoFiles() error {
	return parley.Errorf(parley.CodeUnavailable, "files are not available on this server")
}

func errFileNotFound() error { return parley.Errorf(parley.CodeNotFound, "file not found") }

// FileMaxSize returns the largest file accepted, in bytes (0: files are
// off).
func (s *Service) FileMaxSize() int64 {
	if s.files == nil {
		return 0
	}
	return s.files.MaxSize
}

// Upload keeps data as a file of roomID uploaded by member u and returns
// it. The name is cleaned (files.CleanName); the type is sniffed from the
// bytes (files.Sniff), the declared one ignored. An image gets a
// preview. Fails with CodeTooLarge for a file over MaxSize or over u's
// quota, CodeInvalid for an empty file or an image that does not decode
// (or is too large to), and as Authorize for a non-member.
func (s *Service) Upload(ctx context.Context, u parley.User, roomID, name string, data []byte) (parley.File, error) {
	fc := s.files
	if fc == nil {
		return parley.File{}, errNoFiles()
	}
	if _, err := s.Authorize(ctx, u, roomID); err != nil {
		return parley.File{}, err
	}
	switch {
	case int64(len(data)) > fc.MaxSize:
		return parley.File{}, parley.Errorf(parley.CodeTooLarge, "file is over %d bytes", fc.MaxSize)
	case len(data) == 0:
		return parley.File{}, parley.Errorf(parley.CodeInvalid, "file is empty")
	}
	typ, reason := files.Sniff(data)
	if reason != "" {
		return parley.File{}, parley.Errorf(parley.CodeInvalid, "%s", reason)
	}
	sum := sha256.Sum256(data)
	f := parley.StoredFile{
		File:   parley.File{ID: parley.NewID(), Name: files.CleanName(name), Type: typ, Size: int64(len(data))},
		RoomID: roomID, Uploader: u.ID, SHA256: sum[:],
	}
	if files.IsImage(typ) {
		p, err := files.Preview(data)
		if err != nil {
			return parley.File{}, parley.Errorf(parley.CodeInvalid, "the image does not decode")
		}
		if err := fc.Blobs.Put(ctx, previewKey(f.ID), p); err != nil {
			return parley.File{}, err
		}
		f.Preview = true
	}
	if err := fc.Blobs.Put(ctx, f.ID, data); err != nil {
		s.dropBlobs(f)
		return parley.File{}, err
	}
	// The row last: a crash before it leaves blobs without a row, which
	// the sweeper removes; a row never names a missing blob.
	if err := fc.Store.CreateFile(ctx, f, fc.Quota); err != nil {
		s.dropBlobs(f)
		return parley.File{}, err
	}
	return f.File, nil
}

// dropBlobs deletes the blobs of a file whose row is gone (or was never
// made); a failure is logged, and the sweeper retries.
func (s *Service) dropBlobs(f parley.StoredFile) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.files.Blobs.Delete(ctx, f.ID); err != nil {
		slog.Warn("delete file blob", "file", f.ID, "err", err)
	}
	if f.Preview {
		if err := s.files.Blobs.Delete(ctx, previewKey(f.ID)); err != nil {
			slog.Warn("delete file blob", "file", f.ID, "err", err)
		}
	}
}

// OpenFile returns the file of id and its bytes (or its preview's, a
// JPEG) to a member of its room; while no message carries it, to its
// uploader only. Anyone else, and an unknown id, gets CodeNotFound (the
// same answer, so that ids tell nothing).
func (s *Service) OpenFile(ctx context.Context, u parley.User, id string, preview bool) (parley.File, io.ReadCloser, error) {
	if s.files == nil {
		return parley.File{}, nil, errNoFiles()
	}
	f, err := s.files.Store.File(ctx, id)
	if err != nil {
		if parley.ErrorCode(err) == parley.CodeNotFound {
			err = errFileNotFound()
		}
		return parley.File{}, nil, err
	}
	if f.Seq == 0 && f.Uploader != u.ID {
		return parley.File{}, nil, errFileNotFound()
	}
	if _, err := s.store.Member(ctx, f.RoomID, u.ID); err != nil {
		if parley.ErrorCode(err) == parley.CodeNotFound {
			err = errFileNotFound()
		}
		return parley.File{}, nil, err
	}
	key := f.ID
	if preview {
		if !f.Preview {
			return parley.File{}, nil, errFileNotFound()
		}
		key = previewKey(f.ID)
	}
	rc, err := s.files.Blobs.Get(ctx, key)
	if errors.Is(err, files.ErrNotExist) {
		return parley.File{}, nil, errFileNotFound()
	}
	if err != nil {
		return parley.File{}, nil, err
	}
	return f.File, rc, nil
}

// ParseFileIDs splits a list of file ids separated by commas (the STOMP
// header's form); empty for "".
func ParseFileIDs(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	ids := strings.Split(s, ",")
	for i := range ids {
		ids[i] = strings.TrimSpace(ids[i])
	}
	return ids
}

// SendFiles stores a message from member u that carries the files of
// fileIDs (u's own uploads into roomID that no message carries yet, at
// most parley.MaxFilesPerMessage); with no files it is Send. The body may
// be empty when files are given. The files are claimed before the send
// and attached after it; a repeat of clientID finds them claimed by its
// first send. CodeInvalid for a file that is unknown, another room's,
// another user's or carried already.
func (s *Service) SendFiles(ctx context.Context, u parley.User, roomID, body, clientID string, replyTo int64, fileIDs []string) (parley.Message, bool, error) {
	if len(fileIDs) == 0 {
		return s.SendReply(ctx, u, roomID, body, clientID, replyTo)
	}
	if replyTo < 0 {
		return parley.Message{}, false, parley.Errorf(parley.CodeInvalid, "reply_to must be a seq of 1 or more")
	}
	if s.files == nil {
		return parley.Message{}, false, errNoFiles()
	}
	if len(fileIDs) > parley.MaxFilesPerMessage {
		return parley.Message{}, false, parley.Errorf(parley.CodeInvalid, "a message carries at most %d files", parley.MaxFilesPerMessage)
	}
	seen := make(map[string]bool, len(fileIDs))
	for _, id := range fileIDs {
		if id == "" || len(id) > 64 || seen[id] {
			return parley.Message{}, false, parley.Errorf(parley.CodeInvalid, "files must be distinct file ids")
		}
		seen[id] = true
	}
	mentions, err := s.checkSend(ctx, u, roomID, body, clientID, true)
	if err != nil {
		return parley.Message{}, false, err
	}
	claim := "r:" + parley.NewID()
	if clientID != "" {
		claim = "c:" + clientID
	}
	fs, err := s.files.Store.ClaimFiles(ctx, roomID, u.ID, claim, fileIDs)
	if err != nil {
		return parley.Message{}, false, err
	}
	if len(fs) != len(fileIDs) {
		if len(fs) > 0 {
			if err := s.files.Store.ReleaseFiles(ctx, claim); err != nil {
				slog.Warn("release claimed files", "err", err)
			}
		}
		return parley.Message{}, false, parley.Errorf(parley.CodeInvalid, "files must be your own uploads into this room that no message carries yet")
	}
	byID := make(map[string]parley.File, len(fs))
	for _, f := range fs {
		byID[f.ID] = f.File
	}
	carried := make([]parley.File, len(fileIDs))
	for i, id := range fileIDs {
		carried[i] = byID[id]
	}
	m, created, err := s.store.Send(ctx, parley.NewMessage{
		RoomID: roomID, SenderID: u.ID, SenderName: u.Name, Body: body, ClientID: clientID, ReplyTo: replyTo, Files: parley.NewFileList(carried), Mentions: mentions,
	})
	if err != nil {
		if rerr := s.files.Store.ReleaseFiles(ctx, claim); rerr != nil {
			slog.Warn("release claimed files", "err", rerr)
		}
		return parley.Message{}, false, err
	}
	if created {
		s.accepted.Inc()
		s.tellMentioned(ctx, m, "")
	}
	// A crash before this leaves the files claimed and unattached: the
	// sweeper finds their message and attaches them.
	if err := s.files.Store.AttachFiles(ctx, claim, m.Seq); err != nil {
		return parley.Message{}, false, err
	}
	return m, created, nil
}

// deleteMessageFiles deletes the files of a message just deleted: rows
// first, then blobs. A crash in between leaves blobs without rows, which
// the sweeper removes.
func (s *Service) deleteMessageFiles(ctx context.Context, roomID string, seq int64) {
	if s.files == nil {
		return
	}
	fs, err := s.files.Store.DeleteMessageFiles(ctx, roomID, seq)
	if err != nil {
		slog.Warn("delete message files", "room", roomID, "seq", seq, "err", err)
		return
	}
	for _, f := range fs {
		s.dropBlobs(f)
	}
}

// SweepFiles removes orphaned files once: the rows SweepFiles of the
// store finds (files of deleted or expired messages, uploads unattached
// for longer than UnattachedTTL) with their blobs, then the blobs that
// have no row and are not being uploaded right now (a blob is written
// before its row: blobs are listed before the rows are read, so one
// listed is old enough only if it was listed at the previous sweep too;
// seen carries that between sweeps). It returns the number of blobs
// deleted.
func (s *Service) SweepFiles(ctx context.Context, seen map[string]bool) (int, error) {
	if s.files == nil {
		return 0, nil
	}
	fs, err := s.files.Store.SweepFiles(ctx, s.now().Add(-s.files.UnattachedTTL))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, f := range fs {
		s.dropBlobs(f)
		n++
	}
	var keys []string
	if err := s.files.Blobs.List(ctx, func(key string) error {
		keys = append(keys, key)
		return nil
	}); err != nil {
		return n, err
	}
	ids := make([]string, 0, len(keys))
	for _, k := range keys {
		ids = append(ids, strings.TrimSuffix(k, ".p"))
	}
	known, err := s.files.Store.FilesKnown(ctx, ids)
	if err != nil {
		return n, err
	}
	now := make(map[string]bool)
	for i, k := range keys {
		if known[ids[i]] {
			continue
		}
		if seen == nil || !seen[k] {
			now[k] = true // first sight: perhaps an upload in flight
			continue
		}
		if err := s.files.Blobs.Delete(ctx, k); err != nil {
			return n, err
		}
		n++
	}
	if seen != nil {
		clear(seen)
		for k := range now {
			seen[k] = true
		}
	}
	return n, nil
}

// FileSweep runs SweepFiles every interval until Close.
type FileSweep struct {
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// DefaultFileSweepEvery is how often the sweeper runs.
const DefaultFileSweepEvery = 10 * time.Minute

// StartFileSweep starts the sweeper (every DefaultFileSweepEvery when
// every is zero); nil without files.
func (s *Service) StartFileSweep(every time.Duration) *FileSweep {
	if s.files == nil {
		return nil
	}
	if every <= 0 {
		every = DefaultFileSweepEvery
	}
	fw := &FileSweep{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(fw.done)
		seen := map[string]bool{}
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-fw.stop:
				return
			case <-t.C:
			}
			if n, err := s.SweepFiles(context.Background(), seen); err != nil {
				slog.Warn("file sweep", "err", err)
			} else if n > 0 {
				slog.Info("file sweep", "deleted_blobs", n)
			}
		}
	}()
	return fw
}

// Close stops the sweeper and waits for it; nil-safe.
func (fw *FileSweep) Close() {
	if fw == nil {
		return
	}
	fw.once.Do(func() { close(fw.stop) })
	<-fw.done
}

// ExportFiles returns the files u uploaded that the store still holds,
// in the rooms u is a member of (those whose download OpenFile allows u,
// as the export holds only those rooms), oldest first (GET
// /api/me/export); none when files are off.
func (s *Service) ExportFiles(ctx context.Context, u parley.User) ([]parley.StoredFile, error) {
	if s.files == nil {
		return nil, nil
	}
	fs, err := s.files.Store.UploaderFiles(ctx, u.ID)
	if err != nil || len(fs) == 0 {
		return fs, err
	}
	ms, err := s.store.Memberships(ctx, u.ID)
	if err != nil {
		return nil, err
	}
	in := make(map[string]bool, len(ms))
	for _, m := range ms {
		in[m.RoomID] = true
	}
	return slices.DeleteFunc(fs, func(f parley.StoredFile) bool { return !in[f.RoomID] }), nil
}
