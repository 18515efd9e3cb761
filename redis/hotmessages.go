package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	goredis "github.com/redis/go-redis/v9"

	"parley"
)

// Messages implements parley.Store: a newest-first page within the room's
// RecentMessages newest comes from Redis; other pages, and a window that
// is missing or cannot be trusted (reloaded then), from the inner store.
func (h *HotStore) Messages(ctx context.Context, roomID string, p parley.Page) ([]parley.Message, error) {
	limit := parley.ClampPageLimit(p.Limit)
	if p.Forward() || limit > h.cfg.RecentMessages {
		return h.Store.Messages(ctx, roomID, p)
	}
	h.caughtUp(ctx)
	if msgs, ok := h.readWindow(ctx, roomID, p.Before, limit); ok {
		h.m.hit(kindMessages)
		return msgs, nil
	}
	h.m.miss(kindMessages)
	gen, genOK := h.readWindowGen(ctx, roomID) // an edit moves it (hotedits.go)
	loaded, err := h.Store.Messages(ctx, roomID, parley.Newest(h.cfg.RecentMessages))
	if err != nil {
		return nil, err
	}
	complete := len(loaded) < h.cfg.RecentMessages
	if genOK {
		h.storeWindowSince(ctx, roomID, loaded, complete, gen)
		h.storeLastSince(ctx, roomID, loaded, gen)
	}
	i := 0
	if p.Before > 0 {
		i, _ = slices.BinarySearchFunc(loaded, p.Before, func(m parley.Message, before int64) int {
			if m.Seq >= before { // newest first: the seqs at or above before come first
				return -1
			}
			return 1
		})
	}
	page := loaded[i:]
	if len(page) >= limit {
		return page[:limit:limit], nil
	}
	if complete {
		return page, nil
	}
	return h.Store.Messages(ctx, roomID, p)
}

// readWindow answers the page of seqs below before (0: the newest) from
// the room's window; ok is false when the window is missing or not
// contiguous and as new as the last message.
func (h *HotStore) readWindow(ctx context.Context, roomID string, before int64, limit int) ([]parley.Message, bool) {
	pipe := h.rdb.Pipeline()
	max := "+inf"
	if before > 0 {
		max = "(" + strconv.FormatInt(before, 10)
	}
	win := pipe.ZRevRangeByScoreWithScores(ctx, h.windowKey(roomID), &goredis.ZRangeBy{Max: max, Min: "-inf", Count: int64(limit + 1)})
	top := pipe.ZRevRangeWithScores(ctx, h.windowKey(roomID), 0, 0)
	last := pipe.HGet(ctx, h.lastKey(roomID), "s")
	if _, err := pipe.Exec(ctx); err != nil && !isNil(err) {
		if ctx.Err() == nil {
			h.warn("read window", err)
		}
		return nil, false
	}
	zs, tops := win.Val(), top.Val()
	if len(zs) == 0 || len(tops) == 0 || last.Err() != nil {
		return nil, false
	}
	lastSeq, err := strconv.ParseInt(last.Val(), 10, 64)
	if err != nil || int64(tops[0].Score) < lastSeq {
		return nil, false
	}
	want := int64(zs[0].Score) // the first seq must follow before
	if before > 0 && want != before-1 && !(want == int64(tops[0].Score) && want < before) {
		return nil, false
	}
	msgs := make([]parley.Message, 0, limit)
	for _, z := range zs {
		seq := int64(z.Score)
		if seq == 0 { // the start of the room, unless a message is missing above it
			if want == 0 {
				return msgs, true
			}
			break
		}
		if seq != want || len(msgs) == limit {
			break
		}
		var m parley.Message
		s, _ := z.Member.(string)
		if err := json.Unmarshal([]byte(s), &m); err != nil || m.Seq != seq {
			return nil, false
		}
		msgs = append(msgs, m)
		want--
	}
	if len(msgs) < limit {
		return nil, false
	}
	return msgs, true
}

func (h *HotStore) windowArgs(create bool, msgs []parley.Message) []any {
	c := "0"
	if create {
		c = "1"
	}
	args := make([]any, 0, 3+2*len(msgs))
	args = append(args, c, h.ttlArg(), strconv.Itoa(h.cfg.RecentMessages))
	for i := range msgs {
		b, err := json.Marshal(&msgs[i])
		if err != nil {
			panic(fmt.Sprintf("encode message: %v", err)) // a Message always encodes
		}
		args = append(args, strconv.FormatInt(msgs[i].Seq, 10), string(b))
	}
	return args
}
