package rest

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"parley"
	"parley/files"
)

// Files and attachments (design §3b "Files"; docs/files.md):
//
//	POST /api/rooms/{id}/files      raw body; the name in X-Filename (percent-encoded)
//	GET  /api/files/{id}            the bytes, to the room's members
//	GET  /api/files/{id}/preview    an image's preview (a JPEG)
//
// A send carries files with "files": [ids] (routes.go).

// FileService is what the file routes need (*chat.Service implements it).
type FileService interface {
	// Upload keeps data as a file of a room for a member; CodeTooLarge
	// over the size limit or the quota, CodeInvalid for a bad file.
	Upload(ctx context.Context, u parley.User, roomID, name string, data []byte) (parley.File, error)
	// OpenFile returns a file's bytes (or its preview's) to a member of
	// its room; CodeNotFound to anyone else.
	OpenFile(ctx context.Context, u parley.User, id string, preview bool) (parley.File, io.ReadCloser, error)
	// SendFiles is Send with files.
	SendFiles(ctx context.Context, u parley.User, roomID, body, clientID string, replyTo int64, fileIDs []string) (parley.Message, bool, error)
	// FileMaxSize is the largest file, in bytes; 0 when files are off.
	FileMaxSize() int64
}

// FileNameHeader carries an upload's name, percent-encoded (as
// JavaScript's encodeURIComponent does), since a header holds ASCII only.
const FileNameHeader = "X-Filename"

func (h *Handler) fileRoutes() {
	h.handle("POST /api/rooms/{id}/files", h.authed(h.limited(h.upload)))
	h.handle("GET /api/files/{id}", h.authed(h.download))
	h.handle("GET /api/files/{id}/preview", h.authed(h.downloadPreview))
}

func (h *Handler) filesOn() error {
	if h.files == nil || h.files.FileMaxSize() <= 0 {
		return parley.Errorf(parley.CodeUnavailable, "files are not available on this server")
	}
	return nil
}

func (h *Handler) upload(w http.ResponseWriter, r *http.Request) error {
	if err := h.filesOn(); err != nil {
		return err
	}
	limit := h.files.FileMaxSize()
	if r.ContentLength > limit {
		return parley.Errorf(parley.CodeTooLarge, "file is over %d bytes", limit)
	}
	name, err := url.PathUnescape(r.Header.Get(FileNameHeader))
	if err != nil {
		return parley.Errorf(parley.CodeInvalid, "%s must be percent-encoded", FileNameHeader)
	}
	if srv, ok := r.Context().Value(http.ServerContextKey).(*http.Server); ok && srv.ReadTimeout > 0 {
		// An upload may take longer than a JSON body: give it the
		// server's read timeout from here, as decode does, and at
		// least a minute.
		http.NewResponseController(w).SetReadDeadline(time.Now().Add(max(srv.ReadTimeout, time.Minute)))
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return parley.Errorf(parley.CodeTooLarge, "file is over %d bytes", limit)
		}
		return parley.Errorf(parley.CodeInvalid, "reading the upload: %v", err)
	}
	f, err := h.files.Upload(r.Context(), userOf(r), r.PathValue("id"), name, data)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, f)
}

func (h *Handler) download(w http.ResponseWriter, r *http.Request) error {
	return h.serveFile(w, r, false)
}

func (h *Handler) downloadPreview(w http.ResponseWriter, r *http.Request) error {
	return h.serveFile(w, r, true)
}

// serveFile writes a file with the headers that keep a browser from
// running it: nosniff, a sandboxing CSP, and for anything but an image
// (png, jpeg, gif, webp, shown inline) Content-Disposition: attachment.
func (h *Handler) serveFile(w http.ResponseWriter, r *http.Request, preview bool) error {
	if err := h.filesOn(); err != nil {
		return err
	}
	f, rc, err := h.files.OpenFile(r.Context(), userOf(r), r.PathValue("id"), preview)
	if err != nil {
		return err
	}
	defer rc.Close()
	hd := w.Header()
	typ, size := f.Type, strconv.FormatInt(f.Size, 10)
	if preview {
		typ, size = "image/jpeg", ""
	}
	hd.Set("Content-Type", typ)
	if size != "" {
		hd.Set("Content-Length", size)
	}
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	hd.Set("Cache-Control", "private, max-age=3600")
	hd.Set("Cross-Origin-Resource-Policy", "same-origin")
	disposition := "attachment"
	if files.IsImage(typ) {
		disposition = "inline"
	}
	hd.Set("Content-Disposition", mime.FormatMediaType(disposition, map[string]string{"filename": f.Name}))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return nil
	}
	_, err = io.Copy(w, rc)
	return err
}
