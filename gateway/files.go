package gateway

import (
	"context"

	"parley"
	"parley/chat"
)

// Files (design §3b "Files"; docs/files.md): a SEND with header
// "files: id1,id2" posts a message that carries those uploads (see
// chat.Service.SendFiles), and every MESSAGE frame of a message with files
// carries them in a header "files": their JSON array,
// [{"id","name","type","size","preview"}], as REST shows them.

// fileSender is the chat service's send with files (*chat.Service).
type fileSender interface {
	SendFiles(ctx context.Context, u parley.User, roomID, body, clientID string, replyTo int64, fileIDs []string) (parley.Message, bool, error)
}

func (s *session) sendFiles(ctx context.Context, u parley.User, roomID, body, clientID string, replyTo int64, ids string) (parley.Message, error) {
	fs, ok := s.srv.chat.(fileSender)
	if !ok {
		return parley.Message{}, parley.Errorf(parley.CodeUnavailable, "files are not available on this server")
	}
	m, _, err := fs.SendFiles(ctx, u, roomID, body, clientID, replyTo, chat.ParseFileIDs(ids))
	return m, err
}
