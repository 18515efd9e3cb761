package gateway

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"parley/stomp"
)

// TestDroppedClientDoesNotPoisonReaders reproduces issue 10 defect 1: a
// client that drops in the middle of a frame hands its pooled read state
// back; the sessions that draw it next must not inherit the frame's start
// time (a deadline already past), whatever they send. Each CONNECT below
// is longer than one read buffer, so reading it takes a second read, the
// one that waits with the frame's deadline.
func TestDroppedClientDoesNotPoisonReaders(t *testing.T) {
	e := newEnv(t, Config{FrameTimeout: 100 * time.Millisecond})
	e.chat.addUser("alice")
	connect := frame("CONNECT", "", "accept-version:1.2", "passcode:token-alice", "heart-beat:0,0", "x-pad:"+strings.Repeat("p", readBufSize+2000))
	for round := range 3 {
		dropped := e.dial(t, "tcp")
		dropped.send("SEND\ndestination:/app/rooms.x\n\nno NUL follows")
		f := dropped.expect("ERROR", "code:invalid")
		if !strings.Contains(string(f.Body), "incomplete frame") {
			t.Fatalf("round %d: unfinished frame refused with %q, want an incomplete frame", round, f.Body)
		}
		dropped.conn.Close()
		refused := 0
		for range 10 {
			c := e.dial(t, "tcp")
			c.send(connect)
			if f, err := c.read(); err != nil || f.Command != stomp.Connected {
				refused++
				t.Logf("round %d: CONNECT answered %v, %v", round, f, err)
			}
			c.conn.Close()
		}
		if refused > 0 {
			t.Errorf("round %d: %d of 10 CONNECTs refused after a client dropped mid-frame, want 0", round, refused)
		}
	}
}

// wiring are the fields of a read state set once by newReadState, which
// reset keeps; reset must clear every other field.
var wiring = map[string]bool{"connReader.readFn": true, "wsReader.src": true, "wsReader.rs": true}

// TestReadStateResetClearsEverything pools a read state with every field of
// its readers set, as a session that ended anywhere might leave it, and
// checks that reset hands the next session a clean one: only the wiring
// kept and the new session. A field added to connReader or wsReader that
// reset does not clear fails this test.
func TestReadStateResetClearsEverything(t *testing.T) {
	for _, websocket := range []bool{false, true} {
		t.Run(map[bool]string{false: "tcp", true: "websocket"}[websocket], func(t *testing.T) {
			lim := stomp.Limits{MaxBody: 4096, MaxFrame: 32 << 10}
			old := &session{websocket: websocket, version: stomp.V10, fd: -1}
			rs := newReadState(websocket, lim)
			rs.reset(old)
			wired := wiringOf(rs)
			dirty(t, reflect.ValueOf(&rs.cr).Elem(), old)
			dirty(t, reflect.ValueOf(&rs.ws).Elem(), old)
			rs.release()

			next := &session{websocket: websocket, version: stomp.V12, fd: -1}
			rs.reset(next)
			wsSession := next
			if !websocket {
				wsSession = nil // a TCP session reads no WebSocket frames
			}
			checkClean(t, reflect.ValueOf(&rs.cr).Elem(), next)
			checkClean(t, reflect.ValueOf(&rs.ws).Elem(), wsSession)
			if got := wiringOf(rs); !reflect.DeepEqual(got, wired) {
				t.Errorf("reset changed the wiring: %v, want %v", got, wired)
			}
			if rs.raw.Buffered() != 0 || websocket && rs.sbuf.Buffered() != 0 {
				t.Errorf("reset left input buffered")
			}
			if v := rs.sr.Version(); v != stomp.V12 {
				t.Errorf("reset left the reader at version %v, want %v", v, stomp.V12)
			}
		})
	}
}

// field returns a settable view of v's i-th field, exported or not.
func field(v reflect.Value, i int) reflect.Value {
	f := v.Field(i)
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
}

// dirty sets every field of the struct v that is not wiring to a non-zero
// value (sessions to s).
func dirty(t *testing.T, v reflect.Value, s *session) {
	t.Helper()
	for i := range v.NumField() {
		name := v.Type().Name() + "." + v.Type().Field(i).Name
		if wiring[name] {
			continue
		}
		f := field(v, i)
		switch {
		case f.Type() == reflect.TypeOf(s):
			f.Set(reflect.ValueOf(s))
		case f.Type() == reflect.TypeOf(time.Time{}):
			f.Set(reflect.ValueOf(time.Now().Add(-time.Hour)))
		case f.Type() == reflect.TypeOf((*error)(nil)).Elem():
			f.Set(reflect.ValueOf(errors.New("stale")))
		case f.Kind() == reflect.Bool:
			f.SetBool(true)
		case f.CanInt():
			f.SetInt(7)
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Uint8:
			f.SetBytes([]byte("stale"))
		case f.Kind() == reflect.Array && f.Type().Elem().Kind() == reflect.Uint8:
			for j := range f.Len() {
				f.Index(j).SetUint(0xee)
			}
		default:
			t.Fatalf("dirty: no stale value for %s of type %v: teach this test", name, f.Type())
		}
		if f.IsZero() {
			t.Fatalf("dirty: %s is still zero", name)
		}
	}
}

// wiringOf returns the wiring fields of rs's readers, as pointers (a func
// as its code pointer).
func wiringOf(rs *readState) map[string]uintptr {
	m := map[string]uintptr{}
	for _, v := range []reflect.Value{reflect.ValueOf(&rs.cr).Elem(), reflect.ValueOf(&rs.ws).Elem()} {
		for i := range v.NumField() {
			if name := v.Type().Name() + "." + v.Type().Field(i).Name; wiring[name] {
				m[name] = field(v, i).Pointer()
			}
		}
	}
	return m
}

// checkClean checks that every field of the struct v that is not wiring is
// zero, except the session, which must be s.
func checkClean(t *testing.T, v reflect.Value, s *session) {
	t.Helper()
	for i := range v.NumField() {
		name := v.Type().Name() + "." + v.Type().Field(i).Name
		f := field(v, i)
		switch {
		case wiring[name]: // checked by the caller
		case f.Type() == reflect.TypeOf(s):
			if got := f.Interface().(*session); got != s {
				t.Errorf("after reset, %s = %p, want the new session %p", name, got, s)
			}
		case !f.IsZero():
			t.Errorf("after reset, %s = %v, want it cleared", name, f.Interface())
		}
	}
}
