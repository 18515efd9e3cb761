package roomevents

// Online and offline events: a user's presence change is announced once
// it has held for PresenceQuiet (the debounce), and the member listing
// (Seen) shows what the events last announced until then.

import (
	"context"
	"encoding/json"
	"time"

	"parley"
)

// userPresence is what this node last announced of a user.
type userPresence struct {
	online bool        // the last announcement (absent entry: offline)
	gen    uint64      // the pending check's generation
	stop   func() bool // stops the pending check
	heard  uint64      // the changes (settlingUser.heard) the pending check covers
}

// settlingUser is a user whose presence changed and whose quiet period
// has not ended: the member listing keeps showing online, the state the
// events last announced.
type settlingUser struct {
	online bool
	heard  uint64 // changes heard at the intake; the check that covers them all ends the spell
}

// PresenceChanged hears that userID's sessions changed (its first opened
// or its last closed, on any node; "" for anyone). It never blocks; the
// change is announced once it has held for PresenceQuiet.
func (e *Events) PresenceChanged(userID string) {
	if e.cfg.Seen == nil {
		return
	}
	e.enqueue(evItem{kind: itemPresence, user: userID}, true)
}

// heard notes a presence change of userID ("" for anyone announced
// online) that is on its way to the dispatcher: until its quiet period
// ends, Seen reports the user as last announced. Called under qmu.
func (e *Events) heard(userID string) {
	e.pmu.Lock()
	defer e.pmu.Unlock()
	note := func(u string) {
		st := e.settling[u]
		if st == nil {
			st = &settlingUser{online: e.said[u]}
			e.settling[u] = st
		}
		st.heard++
	}
	if userID != "" {
		note(userID)
		return
	}
	for u := range e.said {
		note(u)
	}
}

// heardOf returns the changes of userID heard so far (the dispatcher's
// check covers them).
func (e *Events) heardOf(userID string) uint64 {
	e.pmu.Lock()
	defer e.pmu.Unlock()
	if st := e.settling[userID]; st != nil {
		return st.heard
	}
	return 0
}

// settled records the end of userID's quiet period: online is what the
// events say of them now, and the listing shows the live state again,
// unless a change came after the check began (heard), whose own check
// ends the spell.
func (e *Events) settled(userID string, online bool, heard uint64) {
	e.pmu.Lock()
	defer e.pmu.Unlock()
	if online {
		e.said[userID] = true
	} else {
		delete(e.said, userID)
	}
	if st := e.settling[userID]; st != nil {
		st.online = online
		if st.heard == heard {
			delete(e.settling, userID)
		}
	}
}

// Seen is the member listing's presence (chat.Seen): Config.Seen's
// live state, but for a user whose change is in its quiet period, who is
// shown as the events last announced them (offline if never), so that
// the listing and the online and offline events agree: a reconnect
// within the quiet period shows no flip in either.
func (e *Events) Seen(ctx context.Context, userIDs []string) (map[string]parley.Seen, error) {
	if e.cfg.Seen == nil {
		return map[string]parley.Seen{}, nil
	}
	live, err := e.cfg.Seen.Seen(ctx, userIDs)
	if err != nil {
		return nil, err
	}
	e.pmu.Lock()
	defer e.pmu.Unlock()
	if len(e.settling) == 0 {
		return live, nil
	}
	for _, id := range userIDs {
		if st := e.settling[id]; st != nil {
			p := live[id]
			p.Online = st.online
			live[id] = p
		}
	}
	return live, nil
}

// presenceChanged (re)starts the user's quiet period: the state is read
// and announced once no change came for PresenceQuiet. "" restarts it for
// every user announced online.
func (e *Events) presenceChanged(userID string) {
	if userID == "" {
		for u, p := range e.presence {
			if p.online {
				e.armCheck(u)
			}
		}
		return
	}
	e.armCheck(userID)
}

func (e *Events) armCheck(userID string) {
	p := e.presence[userID]
	if p == nil {
		p = &userPresence{}
		e.presence[userID] = p
	}
	if p.stop != nil {
		p.stop()
	}
	p.gen++
	gen := p.gen
	p.heard = e.heardOf(userID)
	p.stop = e.cfg.AfterFunc(e.cfg.PresenceQuiet, func() {
		e.enqueue(evItem{kind: itemCheck, user: userID, gen: gen}, false)
	})
}

// checkPresence reads the user's state at the end of a quiet period and
// announces it if it differs from the last announcement (a user never
// announced counts as offline).
func (e *Events) checkPresence(userID string, gen uint64) {
	p := e.presence[userID]
	if p == nil || p.gen != gen {
		return // a later change restarted the quiet period
	}
	p.stop = nil
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	seen, err := e.cfg.Seen.Seen(ctx, []string{userID})
	cancel()
	if err != nil {
		e.log.Warn("events: presence", "user", userID, "err", err)
		e.m.lookupErrors.Inc()
		e.armCheck(userID) // try again after another quiet period
		return
	}
	st := seen[userID]
	e.settled(userID, st.Online, p.heard)
	if st.Online == p.online {
		if !st.Online {
			delete(e.presence, userID)
		}
		return
	}
	p.online = st.Online
	if !st.Online {
		delete(e.presence, userID)
	}
	e.announce(userID, st)
}

// announce sends online or offline to the event subscribers of every room
// of the user, and once to each personal event queue of their members.
func (e *Events) announce(userID string, st parley.Seen) {
	kind := KindOffline
	if st.Online {
		kind = KindOnline
	}
	e.m.events.WithLabelValues(kind).Inc()
	if !e.hasSubs() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	ms, err := e.cfg.Rooms.Memberships(ctx, userID)
	cancel()
	if err != nil {
		e.log.Error("events: rooms of user", "user", userID, "err", err)
		e.m.lookupErrors.Inc()
		return
	}
	type body struct {
		User       string     `json:"user"`
		Online     bool       `json:"online"`
		LastSeenAt *time.Time `json:"last_seen_at"`
	}
	b := body{User: userID, Online: st.Online}
	if !st.LastSeenAt.IsZero() {
		t := st.LastSeenAt.UTC()
		b.LastSeenAt = &t
	}
	raw, _ := json.Marshal(b)
	h := [][2]string{{"user", userID}}
	personal := map[string]bool{}
	if e.hasUserSubs() {
		for _, m := range ms {
			ids, err := e.members(m.RoomID)
			if err != nil {
				continue
			}
			for _, id := range ids {
				if id != userID {
					personal[id] = true
				}
			}
		}
	}
	n := 0
	e.mu.Lock()
	for _, m := range ms {
		subs := e.rooms[m.RoomID]
		if len(subs) == 0 {
			continue
		}
		one := []*RoomEvent{{ID: parley.NewID(), Kind: kind, RoomID: m.RoomID, Headers: h, Body: raw}}
		for _, s := range subs {
			if s.UserID != userID {
				deliverLocked(s, one)
				n++
			}
		}
	}
	if len(personal) > 0 {
		one := []*RoomEvent{{ID: parley.NewID(), Kind: kind, Headers: h, Body: raw}}
		for u := range personal {
			for _, s := range e.users[u] {
				deliverLocked(s, one)
				n++
			}
		}
	}
	e.mu.Unlock()
	e.m.fanout.Add(float64(n))
}
