package loadgen

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"sync/atomic"
)

// roomList is seed 001's first test: every user fetches its room list in a
// loop. Each user is a member of Rooms rooms with HistorySize messages.
func (r *run) roomList(ctx context.Context) error {
	accs, _, err := r.setupRooms(ctx, r.o.Users, r.o.Rooms, r.o.HistorySize)
	if err != nil {
		return err
	}
	path := "/api/me/rooms?limit=" + strconv.Itoa(min(r.o.PageSize, 100))
	r.res.Unit = "request"
	start := r.startMeasure(int64(r.o.Users * r.o.Loops))
	r.loop(ctx, r.o.Users, r.o.Loops, start.Add(r.o.Duration), func(ctx context.Context, u, _ int) string {
		_, kind := accs[u].node.hit(ctx, "GET", path, accs[u].Token)
		return kind
	})
	r.stopMeasure(start)
	return nil
}

// history is seed 001's second test: every user pages through the older
// messages of a room of HistorySize messages, wrapping around at the
// oldest page. The cursors are computed from the seeded seqs, so the loop
// decodes no JSON.
func (r *run) history(ctx context.Context) error {
	accs, rooms, err := r.setupRooms(ctx, r.o.Users, 1, r.o.HistorySize)
	if err != nil {
		return err
	}
	limit := min(r.o.PageSize, 100)
	last := rooms[0].LastSeq
	if last == 0 {
		last = int64(r.o.HistorySize)
	}
	pages := max(int((last+int64(limit)-1)/int64(limit)), 1)
	base := "/api/rooms/" + url.PathEscape(rooms[0].ID) + "/messages?limit=" + strconv.Itoa(limit)
	paths := make([]string, pages)
	for k := range paths {
		paths[k] = base
		if k > 0 {
			paths[k] += "&before=" + strconv.FormatInt(last+1-int64(k*limit), 10)
		}
	}
	r.res.Unit = "request"
	start := r.startMeasure(int64(r.o.Users * r.o.Loops))
	r.loop(ctx, r.o.Users, r.o.Loops, start.Add(r.o.Duration), func(ctx context.Context, u, i int) string {
		_, kind := accs[u].node.hit(ctx, "GET", paths[(u+i)%pages], accs[u].Token)
		return kind
	})
	r.stopMeasure(start)
	return nil
}

// open is seed 004's "open a chat": room info and the last message of a
// room the user is a member of, one after the other; latency is the pair.
func (r *run) open(ctx context.Context) error {
	accs, rooms, err := r.setupRooms(ctx, r.o.Users, r.o.Rooms, r.o.HistorySize)
	if err != nil {
		return err
	}
	type paths struct{ info, last string }
	ps := make([]paths, len(rooms))
	for i, rm := range rooms {
		id := url.PathEscape(rm.ID)
		ps[i] = paths{"/api/rooms/" + id, "/api/rooms/" + id + "/messages?limit=1"}
	}
	r.res.Unit = "open"
	start := r.startMeasure(int64(r.o.Users * r.o.Loops))
	r.loop(ctx, r.o.Users, r.o.Loops, start.Add(r.o.Duration), func(ctx context.Context, u, i int) string {
		p := ps[(u+i)%len(ps)]
		if _, kind := accs[u].node.hit(ctx, "GET", p.info, accs[u].Token); kind != "" {
			return kind
		}
		_, kind := accs[u].node.hit(ctx, "GET", p.last, accs[u].Token)
		return kind
	})
	r.stopMeasure(start)
	return nil
}

// setupRooms signs up users, has the first create nRooms group rooms, makes
// every other user a member of each and posts history messages to each.
func (r *run) setupRooms(ctx context.Context, users, nRooms, history int) ([]account, []roomInfo, error) {
	accs, err := r.signUp(ctx, users)
	if err != nil {
		return nil, nil, err
	}
	owner := accs[0]
	rooms := make([]roomInfo, nRooms)
	r.setPhase("rooms", int64(nRooms), 0)
	for i := range rooms {
		if rooms[i], err = owner.createGroup(ctx, fmt.Sprintf("bench %s %d", r.scn, i), 0); err != nil {
			return nil, nil, err
		}
		r.done.Add(1)
	}
	if err := r.joinAll(ctx, accs[1:], rooms); err != nil {
		return nil, nil, err
	}
	if err := r.seedHistory(ctx, accs, rooms, history); err != nil {
		return nil, nil, err
	}
	for i := range rooms {
		if rooms[i], err = owner.room(ctx, rooms[i].ID); err != nil {
			return nil, nil, err
		}
	}
	return accs, rooms, nil
}

// seats is seed 003: Users users join a room of Seats seats at once (the
// creator holds one). With Loops > 1 there is one room per loop and each
// user joins them in turn. A 409 room_full is an expected answer, not an
// error; the check is that no room ends with more members than seats.
func (r *run) seats(ctx context.Context) error {
	accs, err := r.signUp(ctx, r.o.Users+1)
	if err != nil {
		return err
	}
	owner, users := accs[r.o.Users], accs[:r.o.Users]
	rooms := make([]roomInfo, r.o.Loops)
	r.setPhase("rooms", int64(len(rooms)), 0)
	err = parallel(ctx, len(rooms), r.o.SetupConcurrency, func(ctx context.Context, i int) error {
		var err error
		rooms[i], err = owner.createGroup(ctx, fmt.Sprintf("bench seats %d", i), r.o.Seats)
		r.done.Add(1)
		return err
	})
	if err != nil {
		return err
	}
	joined := make([]atomic.Int64, len(rooms))
	var full atomic.Int64
	paths := make([]string, len(rooms))
	for i, rm := range rooms {
		paths[i] = "/api/rooms/" + url.PathEscape(rm.ID) + "/members"
	}
	r.res.Unit = "join"
	start := r.startMeasure(int64(r.o.Users * r.o.Loops))
	r.loop(ctx, r.o.Users, r.o.Loops, start.Add(r.o.Duration), func(ctx context.Context, u, i int) string {
		status, kind, apiErr := users[u].node.hitJSON(ctx, "POST", paths[i], users[u].Token)
		switch {
		case status == 201:
			joined[i].Add(1)
			return ""
		case apiErr != nil && apiErr.Code == "room_full":
			full.Add(1)
			return ""
		case status == 200:
			return "already a member"
		}
		return kind
	})
	r.stopMeasure(start)

	res := &SeatsResult{Rooms: len(rooms), Capacity: r.o.Seats, Full: full.Load()}
	for i, rm := range rooms {
		after, err := owner.room(context.WithoutCancel(ctx), rm.ID)
		if err != nil {
			return err
		}
		j := joined[i].Load()
		res.Joined += j
		res.MemberCount += after.MemberCount
		// Oversold: more members than seats by the server's count, or
		// more successful joins than free seats by the clients' count.
		over := max(after.MemberCount-int64(r.o.Seats), j+1-int64(r.o.Seats), 0)
		res.Oversold += over
	}
	r.res.Seats = res
	if res.Oversold > 0 {
		r.res.Notes = append(r.res.Notes, fmt.Sprintf("OVERSOLD: %d members beyond capacity", res.Oversold))
	}
	return nil
}
