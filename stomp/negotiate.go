package stomp

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Version is a STOMP protocol version. It decides how headers are escaped and
// whether lines may end in CR LF. The zero Version is not valid.
type Version uint8

// The protocol versions the codec speaks, in increasing order.
const (
	V10 Version = iota + 1
	V11
	V12
)

// SupportedVersions lists the versions the codec speaks, as a server puts
// them in the version header of the ERROR frame it sends when negotiation
// fails.
const SupportedVersions = "1.0,1.1,1.2"

// String returns the version as written in headers, such as "1.2".
func (v Version) String() string {
	switch v {
	case V10:
		return "1.0"
	case V11:
		return "1.1"
	case V12:
		return "1.2"
	}
	return "Version(" + strconv.Itoa(int(v)) + ")"
}

func (v Version) valid() bool { return v >= V10 && v <= V12 }

// ParseVersion returns the Version written s ("1.0", "1.1" or "1.2") and
// whether s is one of them.
func ParseVersion(s string) (Version, bool) {
	switch s {
	case "1.0":
		return V10, true
	case "1.1":
		return V11, true
	case "1.2":
		return V12, true
	}
	return 0, false
}

// Negotiate returns the protocol version a server speaks with a client whose
// CONNECT or STOMP frame carries the accept-version header acceptVersion: the
// highest version both support. Per the specification an absent header means
// the client supports only 1.0; pass "" for it. If the client accepts no
// supported version, Negotiate returns "", false, and the server should send
// an ERROR frame with a version header of SupportedVersions and close.
// Use ParseVersion to turn the result into a Version for the Reader and the
// encoders.
func Negotiate(acceptVersion string) (version string, ok bool) {
	if acceptVersion == "" {
		return V10.String(), true
	}
	var best Version
	for rest := acceptVersion; rest != ""; {
		var item string
		item, rest, _ = strings.Cut(rest, ",")
		if v, ok := ParseVersion(strings.TrimSpace(item)); ok && v > best {
			best = v
		}
	}
	if best == 0 {
		return "", false
	}
	return best.String(), true
}

// HeartBeat is the value of a heart-beat header, "cx,cy" in milliseconds.
// Send is the smallest interval at which the sender of the header can send
// heart-beats, zero if it cannot; Receive is the interval at which it would
// like to receive them, zero if it does not want them.
type HeartBeat struct {
	Send, Receive time.Duration
}

// maxHeartBeat bounds each heart-beat interval: about 24 days, as a 31-bit
// count of milliseconds.
const maxHeartBeat = 1<<31 - 1

// ParseHeartBeat parses the value of a heart-beat header, "cx,cy" with cx and
// cy non-negative integers of milliseconds (spaces around them are
// tolerated). An empty value is the header's default, "0,0". Values above
// 2^31-1 milliseconds are rejected. The error wraps ErrMalformed.
func ParseHeartBeat(s string) (HeartBeat, error) {
	if s == "" {
		return HeartBeat{}, nil
	}
	x, y, ok := strings.Cut(s, ",")
	if !ok {
		return HeartBeat{}, malformed("heart-beat %q is not two numbers separated by a comma", s)
	}
	send, err := parseMillis(x)
	if err != nil {
		return HeartBeat{}, malformed("heart-beat %q: %v", s, err)
	}
	recv, err := parseMillis(y)
	if err != nil {
		return HeartBeat{}, malformed("heart-beat %q: %v", s, err)
	}
	return HeartBeat{Send: send, Receive: recv}, nil
}

func parseMillis(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" || s[0] < '0' || s[0] > '9' {
		return 0, fmt.Errorf("%q is not a number of milliseconds", s)
	}
	n, err := strconv.ParseUint(s, 10, 31)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number of milliseconds up to %d", s, maxHeartBeat)
	}
	return time.Duration(n) * time.Millisecond, nil
}

// String returns h as a heart-beat header value, "cx,cy" in whole
// milliseconds.
func (h HeartBeat) String() string {
	b := strconv.AppendInt(nil, h.Send.Milliseconds(), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, h.Receive.Milliseconds(), 10)
	return string(b)
}

// NegotiateHeartBeat applies the specification's heart-beat rules to the
// heart-beat header of a client's CONNECT frame and the one the server puts in
// its CONNECTED frame. It returns, for the server, the interval at which it
// must send heart-beats (MAX(sx, cy), or zero for none when sx or cy is zero)
// and the interval at which it should hear from the client (MAX(cx, sy), or
// zero for none). A client gets its own intervals by swapping the arguments.
//
// The peer's clock and the network add delay: the specification suggests
// allowing some margin before deciding a silent peer is dead.
func NegotiateHeartBeat(client, server HeartBeat) (send, receive time.Duration) {
	return interval(server.Send, client.Receive), interval(client.Send, server.Receive)
}

// interval is the heart-beat interval from a sender that can send every s to
// a receiver that wants to hear every r.
func interval(s, r time.Duration) time.Duration {
	if s <= 0 || r <= 0 {
		return 0
	}
	return max(s, r)
}
