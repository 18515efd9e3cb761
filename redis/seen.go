package redis

import (
	"context"
	"errors"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"parley"
)

// Last seen (design §3a, the members listing's online and last_seen_at).
// "{prefix}presence:seen:{user}" holds the Unix millisecond, by Redis's
// clock as the node measured it, at which a node last removed the user's
// entry: their last session on that node closed, or the node closed. It
// is written in the same transaction as the removal, so it costs no round
// trip of its own and nothing at all on a connect; it lives seenTTL.

// seenTTL is how long a last-seen time is kept after it was written.
const seenTTL = 90 * 24 * time.Hour

func (p *Presence) seenKey(user string) string { return p.cfg.Prefix + "presence:seen:" + user }

// queueSeen queues the write of userID's last-seen time, now.
func (p *Presence) queueSeen(ctx context.Context, pipe goredis.Pipeliner, userID string) {
	pipe.Set(ctx, p.seenKey(userID), p.now(), seenTTL)
}

// Seen reports, for each of userIDs, whether the user has a live entry on
// any node (Online) and when one was last removed (LastSeenAt, zero when
// never): one pipelined round trip for all of them. It implements
// chat.Seen for the cluster. Fails with CodeUnavailable when Redis is
// unreachable.
func (p *Presence) Seen(ctx context.Context, userIDs []string) (map[string]parley.Seen, error) {
	out := make(map[string]parley.Seen, len(userIDs))
	if len(userIDs) == 0 {
		return out, nil
	}
	now := strconv.FormatInt(p.now(), 10)
	nodes := make([]*goredis.IntCmd, len(userIDs))
	seen := make([]*goredis.StringCmd, len(userIDs))
	_, err := p.rdb.Pipelined(ctx, func(pipe goredis.Pipeliner) error {
		for i, u := range userIDs {
			nodes[i] = pipe.ZCount(ctx, p.userKey(u), "("+now, "+inf")
			seen[i] = pipe.Get(ctx, p.seenKey(u))
		}
		return nil
	})
	if errors.Is(err, goredis.Nil) { // some users were never seen: not a failure
		err = nil
	}
	p.m.count(err)
	if err != nil {
		return nil, unavailable("presence seen", err)
	}
	for i, u := range userIDs {
		st := parley.Seen{Online: nodes[i].Val() > 0}
		if ms, err := seen[i].Int64(); err == nil {
			st.LastSeenAt = time.UnixMilli(ms).UTC()
		}
		out[u] = st
	}
	return out, nil
}
