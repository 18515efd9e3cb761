package rest

import (
	"context"
	"net/http"

	"parley"
)

// Searcher is what the search routes need of the chat service
// (*chat.Service implements it; design §3a). GET /api/me/search is
// registered with the change routes (changeRoutes); a search in one room
// is GET /api/rooms/{id}/messages?q=, served by messageQuery.
type Searcher interface {
	// SearchRoom and Search find messages holding every word of q, in a
	// room or in every room of u; bad input is parley.CodeInvalid.
	SearchRoom(ctx context.Context, u parley.User, roomID, q string, before int64, limit int) ([]parley.Message, error)
	Search(ctx context.Context, u parley.User, q, cursor string, limit int) (hits []parley.SearchHit, next string, err error)
}

// searchHitView is one hit of a search, its room as the caller sees it.
type searchHitView struct {
	Room    roomView       `json:"room"`
	Message parley.Message `json:"message"`
}

func (h *Handler) search(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	limit, err := limitParam(q.Get("limit"))
	if err != nil {
		return err
	}
	hits, next, err := h.chat.Search(r.Context(), userOf(r), q.Get("q"), q.Get("cursor"), limit)
	if err != nil {
		return err
	}
	views := make([]searchHitView, len(hits))
	for i, hit := range hits {
		views[i] = searchHitView{Room: h.view(r, hit.Room), Message: hit.Message}
	}
	return writeEncoded(w, func(b []byte) []byte { return appendHits(b, views, next) })
}

// appendHits encodes a search's answer by hand, as appendRoomList does a
// room list: byte for byte what encoding/json writes (TestEncodeHits).
func appendHits(b []byte, hits []searchHitView, next string) []byte {
	b = append(b, `{"hits":[`...)
	for i := range hits {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"room":`...)
		b = appendRoomView(b, &hits[i].Room)
		b = append(b, `,"message":`...)
		b = appendMessage(b, &hits[i].Message)
		b = append(b, '}')
	}
	b = append(b, `],"next_cursor":`...)
	if next == "" {
		b = append(b, "null"...)
	} else {
		b = appendString(b, next)
	}
	return append(b, '}')
}
