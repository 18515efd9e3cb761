package gateway

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"parley"
)

// TestPackWebSocket: with Config.PackWebSocket, the STOMP frames of one
// write share a WebSocket text frame, and the STOMP octets the client gets
// are the same, in the same order, as without it, where every STOMP frame
// has a WebSocket frame of its own.
func TestPackWebSocket(t *testing.T) {
	msgs := make([]parley.Message, 20)
	for i := range msgs {
		msgs[i] = parley.Message{
			ID: parley.NewID(), RoomID: "r1", Seq: int64(i + 1), SenderID: "u-alice", SenderName: "alice",
			Body: strings.Repeat(fmt.Sprint(i), 10*i), SentAt: parley.Now(),
		}
	}
	stream := func(pack bool) (stompOctets []byte, wsFrames int) {
		e := newEnv(t, Config{PackWebSocket: pack, Logger: slog.New(slog.DiscardHandler)})
		alice := e.chat.addUser("alice")
		e.chat.addRoom("r1", alice)
		conn, err := idleClient(strings.TrimPrefix(e.http.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		// One Apply: the hub hands the session all of them at once, and
		// its writer writes them together.
		evs := make([]parley.Event, len(msgs))
		for i := range msgs {
			evs[i] = parley.Event{Kind: parley.EventMessage, Room: parley.Room{ID: "r1"}, Message: msgs[i]}
		}
		e.hub.Apply(evs)
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(conn)
		var out bytes.Buffer
		for bytes.Count(out.Bytes(), []byte{0}) < len(msgs) {
			op, payload, err := readServerWSFrame(br)
			if err != nil {
				t.Fatalf("pack %v: after %d frames: %v", pack, wsFrames, err)
			}
			if op != 0x1 {
				t.Fatalf("pack %v: opcode %#x, want a text frame", pack, op)
			}
			out.Write(payload)
			wsFrames++
		}
		return out.Bytes(), wsFrames
	}
	plain, plainFrames := stream(false)
	packed, packedFrames := stream(true)
	if plainFrames != len(msgs) {
		t.Errorf("unpacked: %d WebSocket frames for %d MESSAGEs, want one each", plainFrames, len(msgs))
	}
	if packedFrames >= plainFrames {
		t.Errorf("packed: %d WebSocket frames for %d MESSAGEs, want fewer", packedFrames, len(msgs))
	}
	// The frames differ only in their subscription's session: none, the
	// subscription id is the client's ("0") in both.
	if !bytes.Equal(plain, packed) {
		t.Errorf("the STOMP octets differ:\nunpacked %q\npacked   %q", plain, packed)
	}
	if n := strings.Count(string(packed), "MESSAGE\n"); n != len(msgs) {
		t.Errorf("%d MESSAGE frames, want %d", n, len(msgs))
	}
}

// readServerWSFrame reads one unmasked, unfragmented WebSocket frame from a
// server.
func readServerWSFrame(br *bufio.Reader) (op byte, payload []byte, err error) {
	var hdr [8]byte
	if _, err := io.ReadFull(br, hdr[:2]); err != nil {
		return 0, nil, err
	}
	if hdr[0]&0x80 == 0 || hdr[1]&0x80 != 0 {
		return 0, nil, fmt.Errorf("frame header %x: want FIN and no mask", hdr[:2])
	}
	op = hdr[0] & 0x0f
	size := int(hdr[1] & 0x7f)
	switch size {
	case 126:
		if _, err := io.ReadFull(br, hdr[:2]); err != nil {
			return 0, nil, err
		}
		size = int(hdr[0])<<8 | int(hdr[1])
	case 127:
		if _, err := io.ReadFull(br, hdr[:8]); err != nil {
			return 0, nil, err
		}
		size = 0
		for _, c := range hdr {
			size = size<<8 | int(c)
		}
	}
	payload = make([]byte, size)
	_, err = io.ReadFull(br, payload)
	return op, payload, err
}
