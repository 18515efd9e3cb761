package redis

import (
	"context"
	"fmt"

	goredis "github.com/redis/go-redis/v9"
)

// ForgetHot drops the shared hot data (HotStore) of rooms and users that
// a writer other than the nodes changed in PostgreSQL (parley import): each
// room's info, last message, newest messages and member listing, and each
// user's memberships and the nodes' memos of their notification levels
// (the user's notify generation moves: hotnotify.go). The info, listing
// and memberships go as a join's invalidation does (the key deleted and
// its generation moved, so that a load in flight installs nothing it read
// before); so do the last message and the window, whose loads the
// window's generation guards. Every node's next read of each loads it
// from PostgreSQL. prefix is the nodes' --redis-prefix (DefaultPrefix when
// empty).
func ForgetHot(ctx context.Context, rdb *goredis.Client, prefix string, rooms, users []string) error {
	if len(rooms)+len(users) == 0 {
		return nil
	}
	h := &HotStore{cfg: HotConfig{Prefix: prefix}.withKeyDefaults()} // the nodes' keys and TTL
	ttl := h.ttlArg()
	pipe := rdb.Pipeline()
	for _, id := range rooms {
		scriptInvalidate.Eval(ctx, pipe, []string{h.roomKey(id), h.roomGen(id)}, ttl)
		scriptInvalidate.Eval(ctx, pipe, []string{h.membersKey(id), h.membersGen(id)}, ttl)
		h.forgetWindow(ctx, pipe, id, ttl)
	}
	for _, id := range users {
		scriptInvalidate.Eval(ctx, pipe, []string{h.userKey(id), h.userGen(id)}, ttl)
		h.moveNotifyGen(ctx, pipe, id)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("forget hot data: %w", err)
	}
	return nil
}
