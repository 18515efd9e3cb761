package redis

import (
	"context"

	goredis "github.com/redis/go-redis/v9"
)

// Heads keeps each room's head, the seq of its last committed message, in
// Redis where every node reads it: a node that missed batches (a broker
// outage, a sender that died before publishing, routes lost with Redis)
// compares its rooms' delivery positions with their heads and reads what it
// lacks from the store, without waiting for the room's next message.
//
// Key: "{prefix}heads", a sorted set of room ids scored by head. A head
// only moves forward (ZADD GT), so the commits of several nodes may reach
// Redis in any order. Heads lost with Redis come back with each room's next
// commit and with the relays' retries of the writes that failed; a missing
// head means "nothing known", never "nothing committed".
type Heads struct {
	rdb *goredis.Client
	key string
}

// NewHeads returns the heads under prefix (DefaultPrefix when empty) on
// rdb, which the caller closes.
func NewHeads(rdb *goredis.Client, prefix string) *Heads {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return &Heads{rdb: rdb, key: prefix + "heads"}
}

// headsChunk bounds the rooms of one command.
const headsChunk = 1000

// Advance moves each room's head to its seq, unless the head is there
// already or beyond. It fails with CodeUnavailable when Redis is
// unreachable.
func (h *Heads) Advance(ctx context.Context, heads map[string]int64) error {
	if len(heads) == 0 {
		return nil
	}
	zs := make([]goredis.Z, 0, min(len(heads), headsChunk))
	_, err := h.rdb.Pipelined(ctx, func(pipe goredis.Pipeliner) error {
		for room, seq := range heads {
			zs = append(zs, goredis.Z{Score: float64(seq), Member: room})
			if len(zs) == headsChunk {
				pipe.ZAddGT(ctx, h.key, zs...)
				zs = make([]goredis.Z, 0, headsChunk)
			}
		}
		if len(zs) > 0 {
			pipe.ZAddGT(ctx, h.key, zs...)
		}
		return nil
	})
	return unavailable("advance heads", err)
}

// Heads returns the heads of roomIDs; a room without one is absent. It
// fails with CodeUnavailable when Redis is unreachable.
func (h *Heads) Heads(ctx context.Context, roomIDs []string) (map[string]int64, error) {
	out := make(map[string]int64, len(roomIDs))
	if len(roomIDs) == 0 {
		return out, nil
	}
	var cmds []*goredis.FloatSliceCmd
	var chunks [][]string
	_, err := h.rdb.Pipelined(ctx, func(pipe goredis.Pipeliner) error {
		for rest := roomIDs; len(rest) > 0; {
			chunk := rest[:min(len(rest), headsChunk)]
			rest = rest[len(chunk):]
			chunks = append(chunks, chunk)
			cmds = append(cmds, pipe.ZMScore(ctx, h.key, chunk...))
		}
		return nil
	})
	if err != nil {
		return nil, unavailable("read heads", err)
	}
	for i, cmd := range cmds {
		// ZMSCORE answers nil for a missing member; go-redis reads it as 0.
		for j, score := range cmd.Val() {
			if score > 0 {
				out[chunks[i][j]] = int64(score)
			}
		}
	}
	return out, nil
}
