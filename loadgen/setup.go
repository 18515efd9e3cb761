package loadgen

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
)

// account is a signed-up virtual user.
type account struct {
	ID, Name, Token string
	node            *api
}

// benchPassword is every virtual user's password.
const benchPassword = "parley-bench-password"

// runID returns a short random tag that keeps the names of one run apart
// from those of earlier runs against the same server.
func runID() string {
	var b [4]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// parallel runs f(0..n-1) with at most conc in flight and returns the first
// error; it stops starting new calls after an error or when ctx ends.
func parallel(parent context.Context, n, conc int, f func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	var (
		wg   sync.WaitGroup
		once sync.Once
		ferr error
		next = make(chan int)
	)
	for w := 0; w < min(conc, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(ctx, i); err != nil {
					once.Do(func() { ferr = err; cancel() })
				}
			}
		}()
	}
feed:
	for i := 0; i < n; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if ferr == nil {
		ferr = parent.Err()
	}
	return ferr
}

// signUp registers and logs in n users, SetupConcurrency at a time (each
// costs the server two password hashes), user i on node i mod nodes.
func (r *run) signUp(ctx context.Context, n int) ([]account, error) {
	if err := r.checkSignupLimit(ctx, n); err != nil {
		return nil, err
	}
	prefix := "b" + runID() + "-"
	accs := make([]account, n)
	r.setPhase("sign-up", int64(n), 0)
	err := parallel(ctx, n, r.o.SetupConcurrency, func(ctx context.Context, i int) error {
		node := r.node(i)
		creds := map[string]string{"name": prefix + strconv.Itoa(i), "password": benchPassword}
		var u struct{ ID, Name string }
		if status, err := node.callNoRetry(ctx, "POST", "/api/users", creds, &u); status == http.StatusTooManyRequests {
			return fmt.Errorf("sign up %s: %w: the server limits sign-ups per client address; start the server you load with --signup-rate 0", creds["name"], err)
		} else if err != nil {
			return fmt.Errorf("sign up %s: %w", creds["name"], err)
		}
		var tok struct{ Token string }
		if _, err := node.call(ctx, "POST", "/api/tokens", "", creds, &tok); err != nil {
			return fmt.Errorf("log in %s: %w", creds["name"], err)
		}
		accs[i] = account{ID: u.ID, Name: u.Name, Token: tok.Token, node: node}
		r.done.Add(1)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return accs, nil
}

// roomInfo is the part of a room the bench reads.
type roomInfo struct {
	ID          string `json:"id"`
	Capacity    int    `json:"capacity"`
	MemberCount int64  `json:"member_count"`
	LastSeq     int64  `json:"last_seq"`
}

func (a account) createGroup(ctx context.Context, title string, capacity int) (roomInfo, error) {
	var rm roomInfo
	in := map[string]any{"kind": "group", "title": title}
	if capacity > 0 {
		in["capacity"] = capacity
	}
	if _, err := a.node.call(ctx, "POST", "/api/rooms", a.Token, in, &rm); err != nil {
		return rm, fmt.Errorf("create room: %w", err)
	}
	return rm, nil
}

func (a account) createDirect(ctx context.Context, peer string) (roomInfo, error) {
	var rm roomInfo
	in := map[string]any{"kind": "direct", "peer": peer}
	if _, err := a.node.call(ctx, "POST", "/api/rooms", a.Token, in, &rm); err != nil {
		return rm, fmt.Errorf("create direct room: %w", err)
	}
	return rm, nil
}

func (a account) join(ctx context.Context, roomID string) error {
	if _, err := a.node.call(ctx, "POST", "/api/rooms/"+url.PathEscape(roomID)+"/members", a.Token, nil, nil); err != nil {
		return fmt.Errorf("join room: %w", err)
	}
	return nil
}

func (a account) room(ctx context.Context, roomID string) (roomInfo, error) {
	var rm roomInfo
	if _, err := a.node.call(ctx, "GET", "/api/rooms/"+url.PathEscape(roomID), a.Token, nil, &rm); err != nil {
		return rm, fmt.Errorf("get room: %w", err)
	}
	return rm, nil
}

func (a account) markRead(ctx context.Context, roomID string, seq int64) error {
	in := map[string]int64{"seq": seq}
	if _, err := a.node.call(ctx, "PUT", "/api/rooms/"+url.PathEscape(roomID)+"/read", a.Token, in, nil); err != nil {
		return fmt.Errorf("mark read: %w", err)
	}
	return nil
}

func (a account) post(ctx context.Context, roomID, body string) error {
	in := map[string]string{"body": body}
	if _, err := a.node.call(ctx, "POST", "/api/rooms/"+url.PathEscape(roomID)+"/messages", a.Token, in, nil); err != nil {
		return fmt.Errorf("post message: %w", err)
	}
	return nil
}

// joinAll makes every account a member of every room.
func (r *run) joinAll(ctx context.Context, accs []account, rooms []roomInfo) error {
	r.setPhase("join", int64(len(accs)*len(rooms)), 0)
	return parallel(ctx, len(accs)*len(rooms), r.o.SetupConcurrency*4, func(ctx context.Context, i int) error {
		r.done.Add(1)
		return accs[i/len(rooms)].join(ctx, rooms[i%len(rooms)].ID)
	})
}

// seedHistory posts n messages to each room, from each member in turn
// (every account is a member of every room): the server limits each
// user's sends, and one sender would wait on that limit.
func (r *run) seedHistory(ctx context.Context, accs []account, rooms []roomInfo, n int) error {
	r.setPhase("seed", int64(n*len(rooms)), 0)
	body := payload(r.o.Payload)
	return parallel(ctx, n*len(rooms), r.o.SetupConcurrency*4, func(ctx context.Context, i int) error {
		r.done.Add(1)
		return accs[i%len(accs)].post(ctx, rooms[i%len(rooms)].ID, body)
	})
}

// payload returns a body of n printable bytes.
func payload(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return string(b)
}

// checkSignupLimit refuses, before any sign-up, a set-up of n users
// against a node that limits sign-ups per client address: the run would
// stop at the limit, having spent the address's sign-ups, and a person
// signing up from it would then be told "too many sign-ups". A node too
// old to say (no signups_limited in GET /api/config) is tried as before.
func (r *run) checkSignupLimit(ctx context.Context, n int) error {
	for _, node := range r.nodes {
		var cfg struct {
			SignupsLimited *bool `json:"signups_limited"`
		}
		if _, err := node.call(ctx, "GET", "/api/config", "", nil, &cfg); err != nil {
			return fmt.Errorf("read the server's limits: %w", err)
		}
		if cfg.SignupsLimited != nil && *cfg.SignupsLimited {
			return fmt.Errorf("%s limits sign-ups per client address, and the set-up signs up %d users from this one: "+
				"restart it with --signup-rate 0 (PARLEY_SIGNUP_RATE=0) to load it; nothing was signed up", node.base, n)
		}
	}
	return nil
}
