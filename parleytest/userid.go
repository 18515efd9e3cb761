package parleytest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"parley"
)

// testCreateUserWithID: an account made with a given id (JWT sign-in
// derives it from the identity) takes that id; a taken id or name is a
// conflict; of many creates of one id at once exactly one succeeds, with
// the same name or different ones (two nodes provisioning the same new
// user).
func testCreateUserWithID(t *testing.T, newStore NewStoreFunc) {
	s := newStore(t, nil)
	ctx := context.Background()
	ada, err := s.CreateUser(ctx, parley.NewUser{ID: "x-ada", Name: "ada"})
	if err != nil || ada.ID != "x-ada" || ada.Name != "ada" {
		t.Fatalf("CreateUser(id x-ada) = %+v, %v", ada, err)
	}
	if u, err := s.User(ctx, "x-ada"); err != nil || u.ID != "x-ada" || u.Name != "ada" {
		t.Errorf("User(x-ada) = %+v, %v", u, err)
	}
	if _, h, err := s.UserByName(ctx, "ada"); err != nil || len(h) != 0 {
		t.Errorf("UserByName(ada) = %q, %v; want no password hash", h, err)
	}
	_, err = s.CreateUser(ctx, parley.NewUser{ID: "x-ada", Name: "ada2"})
	wantCode(t, "CreateUser(id x-ada again, another name)", err, parley.CodeConflict)
	_, _, err = s.UserByName(ctx, "ada2")
	wantCode(t, "UserByName(ada2)", err, parley.CodeNotFound)
	_, err = s.CreateUser(ctx, parley.NewUser{ID: "x-other", Name: "ada"})
	wantCode(t, "CreateUser(another id, name ada)", err, parley.CodeConflict)
	_, err = s.User(ctx, "x-other")
	wantCode(t, "User(x-other)", err, parley.CodeNotFound)
	_, err = s.CreateUser(ctx, parley.NewUser{Name: "ada", PasswordHash: []byte("h")})
	wantCode(t, "CreateUser(ada, no id)", err, parley.CodeNameTaken)

	for _, sameName := range []bool{true, false} {
		t.Run(fmt.Sprintf("race, same name %v", sameName), func(t *testing.T) {
			const n = 8
			id := fmt.Sprintf("x-race-%v", sameName)
			var wg sync.WaitGroup
			users := make([]parley.User, n)
			errs := make([]error, n)
			for i := range n {
				name := "racer-" + fmt.Sprint(sameName)
				if !sameName {
					name = fmt.Sprintf("racer-%d", i)
				}
				wg.Go(func() { users[i], errs[i] = s.CreateUser(ctx, parley.NewUser{ID: id, Name: name}) })
			}
			wg.Wait()
			var made []parley.User
			for i, err := range errs {
				switch parley.ErrorCode(err) {
				case "":
					made = append(made, users[i])
				case parley.CodeConflict:
				default:
					t.Errorf("CreateUser(%s) #%d error = %v, want none or conflict", id, i, err)
				}
			}
			if len(made) != 1 {
				t.Fatalf("%d of %d creates of %s succeeded, want 1: %+v", len(made), n, id, made)
			}
			if u, err := s.User(ctx, id); err != nil || u.Name != made[0].Name {
				t.Errorf("User(%s) = %+v, %v; want %+v", id, u, err, made[0])
			}
		})
	}
}
