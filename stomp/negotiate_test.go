package stomp_test

import (
	"errors"
	"testing"
	"time"

	"parley/stomp"
)

func TestNegotiate(t *testing.T) {
	tests := []struct {
		name   string
		accept string
		want   string
		ok     bool
	}{
		{"if the accept-version header is missing, the client only supports 1.0", "", "1.0", true},
		{"the server responds with the highest version in common", "1.0,1.1,1.2", "1.2", true},
		{"the order of accept-version does not matter", "1.2,1.1,1.0", "1.2", true},
		{"a 1.1 client", "1.1", "1.1", true},
		{"a 1.0 client naming its version", "1.0", "1.0", true},
		{"versions the server does not speak are skipped", "1.1,2.0", "1.1", true},
		{"spaces around versions are tolerated", " 1.0 , 1.1 ", "1.1", true},
		{"no version in common", "2.0,3.0", "", false},
		{"garbage", ",,,", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := stomp.Negotiate(tc.accept)
			if got != tc.want || ok != tc.ok {
				t.Errorf("Negotiate(%q) = %q, %v; want %q, %v", tc.accept, got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestParseVersion(t *testing.T) {
	for _, v := range []stomp.Version{stomp.V10, stomp.V11, stomp.V12} {
		if got, ok := stomp.ParseVersion(v.String()); got != v || !ok {
			t.Errorf("ParseVersion(%q) = %v, %v; want %v, true", v.String(), got, ok, v)
		}
	}
	for _, s := range []string{"", "1", "1.3", "2.0", " 1.2"} {
		if got, ok := stomp.ParseVersion(s); ok {
			t.Errorf("ParseVersion(%q) = %v, true; want false", s, got)
		}
	}
}

func TestParseHeartBeat(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name string
		in   string
		want stomp.HeartBeat
		err  error
	}{
		{"the default value is 0,0: absent header", "", stomp.HeartBeat{}, nil},
		{"0,0 means no heart-beats", "0,0", stomp.HeartBeat{}, nil},
		{"stomp.js default", "10000,10000", stomp.HeartBeat{Send: 10000 * ms, Receive: 10000 * ms}, nil},
		{"different values", "1000,5000", stomp.HeartBeat{Send: 1000 * ms, Receive: 5000 * ms}, nil},
		{"spaces are tolerated", " 100 , 200 ", stomp.HeartBeat{Send: 100 * ms, Receive: 200 * ms}, nil},
		{"largest value", "2147483647,0", stomp.HeartBeat{Send: 2147483647 * ms}, nil},
		{"too large", "2147483648,0", stomp.HeartBeat{}, stomp.ErrMalformed},
		{"one number", "1000", stomp.HeartBeat{}, stomp.ErrMalformed},
		{"three numbers", "1,2,3", stomp.HeartBeat{}, stomp.ErrMalformed},
		{"negative", "-1,0", stomp.HeartBeat{}, stomp.ErrMalformed},
		{"plus sign", "+1,0", stomp.HeartBeat{}, stomp.ErrMalformed},
		{"empty number", ",0", stomp.HeartBeat{}, stomp.ErrMalformed},
		{"not a number", "a,b", stomp.HeartBeat{}, stomp.ErrMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := stomp.ParseHeartBeat(tc.in)
			if got != tc.want || !errorIs(err, tc.err) {
				t.Errorf("ParseHeartBeat(%q) = %v, %v; want %v, %v", tc.in, got, err, tc.want, tc.err)
			}
		})
	}
}

func TestHeartBeatString(t *testing.T) {
	h := stomp.HeartBeat{Send: 10 * time.Second, Receive: 1500 * time.Millisecond}
	if got := h.String(); got != "10000,1500" {
		t.Errorf("%#v.String() = %q, want %q", h, got, "10000,1500")
	}
	back, err := stomp.ParseHeartBeat(h.String())
	if err != nil || back != h {
		t.Errorf("ParseHeartBeat(%q) = %v, %v; want %v", h.String(), back, err, h)
	}
}

func TestNegotiateHeartBeat(t *testing.T) {
	const s = time.Second
	hb := func(x, y time.Duration) stomp.HeartBeat { return stomp.HeartBeat{Send: x, Receive: y} }
	tests := []struct {
		name           string
		client, server stomp.HeartBeat
		send, receive  time.Duration
	}{
		{"0,0 on both sides: no heart-beats", hb(0, 0), hb(0, 0), 0, 0},
		{"the client cannot send (cx=0): the server expects nothing", hb(0, 10*s), hb(5*s, 5*s), 10 * s, 0},
		{"the server does not want to receive (sy=0): the server expects nothing", hb(10*s, 10*s), hb(5*s, 0), 10 * s, 0},
		{"the server cannot send (sx=0): no heart-beats from the server", hb(10*s, 10*s), hb(0, 5*s), 0, 10 * s},
		{"the client does not want to receive (cy=0): no heart-beats from the server", hb(10*s, 0), hb(5*s, 5*s), 0, 10 * s},
		{"otherwise every MAX(cx,sy) from the client and MAX(sx,cy) from the server", hb(4*s, 10*s), hb(5*s, 3*s), 10 * s, 4 * s},
		{"the slower side sets the pace", hb(1*s, 1*s), hb(20*s, 20*s), 20 * s, 20 * s},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			send, receive := stomp.NegotiateHeartBeat(tc.client, tc.server)
			if send != tc.send || receive != tc.receive {
				t.Errorf("NegotiateHeartBeat(%v, %v) = %v, %v; want %v, %v", tc.client, tc.server, send, receive, tc.send, tc.receive)
			}
			// The client's view is the same negotiation with the roles swapped.
			csend, creceive := stomp.NegotiateHeartBeat(tc.server, tc.client)
			if csend != tc.receive || creceive != tc.send {
				t.Errorf("NegotiateHeartBeat(%v, %v) = %v, %v; want %v, %v", tc.server, tc.client, csend, creceive, tc.receive, tc.send)
			}
		})
	}
}

func TestParseHeartBeatErrorMessage(t *testing.T) {
	_, err := stomp.ParseHeartBeat("x,1")
	if !errors.Is(err, stomp.ErrMalformed) || err.Error() == stomp.ErrMalformed.Error() {
		t.Errorf("ParseHeartBeat(%q) = %v, want a detailed ErrMalformed", "x,1", err)
	}
}
