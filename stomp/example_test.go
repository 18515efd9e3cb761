package stomp_test

import (
	"fmt"
	"io"
	"strings"
	"time"

	"parley/stomp"
)

// A session reads the CONNECT frame at the default version, negotiates, and
// reads on at the negotiated version, refreshing its read deadline on every
// frame and heart-beat.
func ExampleReader() {
	in := "CONNECT\naccept-version:1.1,1.2\nheart-beat:10000,10000\n\n\x00" +
		"\n" +
		"SEND\ndestination:/app/rooms.7\nreceipt:r1\ncontent-length:5\n\nhello\x00"
	r := stomp.NewReader(strings.NewReader(in), stomp.Limits{})

	f, err := r.Read()
	if err != nil {
		fmt.Println(err)
		return
	}
	version, ok := stomp.Negotiate(string(f.Get("accept-version")))
	if !ok {
		fmt.Println("ERROR version:" + stomp.SupportedVersions)
		return
	}
	v, _ := stomp.ParseVersion(version)
	r.SetVersion(v)
	client, err := stomp.ParseHeartBeat(string(f.Get("heart-beat")))
	if err != nil {
		fmt.Println(err)
		return
	}
	send, receive := stomp.NegotiateHeartBeat(client, stomp.HeartBeat{Send: 5 * time.Second, Receive: 5 * time.Second})
	fmt.Println("version", version, "send every", send, "expect every", receive)

	for {
		f, err := r.Read()
		if err == io.EOF {
			return
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		// conn.SetReadDeadline(time.Now().Add(2 * receive)) goes here.
		if f.Command == stomp.Heartbeat {
			fmt.Println("heart-beat")
			continue
		}
		fmt.Printf("%v to %s: %s\n", f.Command, f.Get("destination"), f.Body)
	}
	// Output:
	// version 1.2 send every 10s expect every 10s
	// heart-beat
	// SEND to /app/rooms.7: hello
}

// The hub encodes a MESSAGE once per destination and appends it for each
// subscriber with its own subscription id.
func ExamplePrepare() {
	var msg stomp.Frame
	msg.Command = stomp.Message
	msg.Add("destination", "/topic/rooms.7")
	msg.Add("message-id", "m-1")
	msg.AddInt("seq", 42)
	msg.Body = []byte("hi")

	p, err := stomp.Prepare(&msg, stomp.V12, "subscription")
	if err != nil {
		fmt.Println(err)
		return
	}
	var buf []byte
	for _, sub := range []string{"sub-0", "sub-1"} {
		buf, _ = p.Append(buf[:0], sub)
		fmt.Printf("%q\n", buf)
	}
	// Output:
	// "MESSAGE\nsubscription:sub-0\ndestination:/topic/rooms.7\nmessage-id:m-1\nseq:42\ncontent-length:2\n\nhi\x00"
	// "MESSAGE\nsubscription:sub-1\ndestination:/topic/rooms.7\nmessage-id:m-1\nseq:42\ncontent-length:2\n\nhi\x00"
}
