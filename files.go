package parley

import (
	"encoding/json"
	"time"
)

// Files and attachments (design §3b "Files"; docs/files.md). A member
// uploads a file into a room; it stays the uploader's, unattached, until a
// message of theirs in that room carries it. A message carries its files
// as a list of File in the message itself (Message.Files), so that a page
// of history, a replay or a hot cache hands them out with no query of
// their own.

// File is a file as a message carries it: its id (the download is GET
// /api/files/{id}), its sanitised name, its type (sniffed from the bytes),
// its size in bytes, and whether a preview image exists (GET
// /api/files/{id}/preview).
type File struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Type    string `json:"type"`
	Size    int64  `json:"size"`
	Preview bool   `json:"preview,omitempty"`
}

// StoredFile is a file's row: File and what the server keeps of it.
// Seq is the seq of the message that carries it, 0 while it is
// unattached; Claim is the key of the send that claimed it ("" while no
// send did; see chat.Service.SendFiles).
type StoredFile struct {
	File
	RoomID    string
	Uploader  string
	SHA256    []byte
	CreatedAt time.Time
	Seq       int64
	Claim     string
}

// FileList is the files a message carries, kept as their JSON array
// ([{"id","name","type","size","preview"}], as encoding/json writes it)
// and "" for none: a Message stays comparable, a store reads it as one
// text column, and the transports write it as it is (REST's "files", the
// STOMP header "files").
type FileList string

// NewFileList returns the FileList of files ("" for none).
func NewFileList(files []File) FileList {
	if len(files) == 0 {
		return ""
	}
	b, _ := json.Marshal(files) // cannot fail: strings and numbers
	return FileList(b)
}

// List decodes the list (nil for "", and for a list that does not
// decode, which no store writes).
func (l FileList) List() []File {
	if l == "" {
		return nil
	}
	var fs []File
	if json.Unmarshal([]byte(l), &fs) != nil {
		return nil
	}
	return fs
}

// MarshalJSON writes the list as its JSON array.
func (l FileList) MarshalJSON() ([]byte, error) {
	if l == "" {
		return []byte("[]"), nil
	}
	return []byte(l), nil
}

// UnmarshalJSON reads a JSON array of files, kept as encoding/json
// writes it (so that it reads back equal), or null.
func (l *FileList) UnmarshalJSON(b []byte) error {
	var fs []File
	if err := json.Unmarshal(b, &fs); err != nil {
		return err
	}
	*l = NewFileList(fs)
	return nil
}

// MaxFilesPerMessage is the most files one message carries.
const MaxFilesPerMessage = 10
