package loadgen

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strconv"
	"testing"

	"parley/stomp"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
)

// The load generator shares the machine with the server under test, so
// its own cost per delivery weighs on every figure: these benchmarks
// measure the client's reading of one delivery, Parley's MESSAGE frame
// and Centrifugo's push, each in its own WebSocket message.

// wsMessages returns n server WebSocket messages carrying payload(i).
func wsMessages(n int, payload func(i int) []byte) []byte {
	var buf bytes.Buffer
	for i := 0; i < n; i++ {
		wsutil.WriteServerMessage(&buf, ws.OpText, payload(i))
	}
	return buf.Bytes()
}

// replay is a net.Conn reading data over and over.
type replay struct {
	net.Conn
	data []byte
	off  int
}

func (r *replay) Read(p []byte) (int, error) {
	if r.off == len(r.data) {
		r.off = 0
	}
	n := copy(p, r.data[r.off:])
	r.off += n
	return n, nil
}

const benchBody = "1234567890123:17:42:xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"

func BenchmarkReadSTOMPMessage(b *testing.B) {
	data := wsMessages(1000, func(i int) []byte {
		return []byte("MESSAGE\ndestination:/topic/rooms.tq3w5hdddh3xbvnkd6ljhyxmvu\nsubscription:0\nmessage-id:jfkoqzu5bvdchbd6axb6mw4q3a\n" +
			"content-type:text/plain;charset=UTF-8\nroom:tq3w5hdddh3xbvnkd6ljhyxmvu\nseq:" + strconv.Itoa(i+1) +
			"\nsender:7w2kfypmnrhhdjzqnbzp4cgxoa\nsender-name:b80bb7963-17\nsent-at:2026-12-01T13:12:24.123456Z\nclient-id:b80bb7963-17-42\ncontent-length:" +
			strconv.Itoa(len(benchBody)) + "\n\n" + benchBody + "\x00")
	})
	c := &stompConn{}
	src := &replay{data: data}
	wr := &wsutil.Reader{Source: bufio.NewReaderSize(src, busyBuffer), State: ws.StateClientSide}
	c.br = bufio.NewReaderSize(&wsStream{r: wr, c: c}, busyBuffer)
	c.rd = stomp.NewReader(c.br, readLimits)
	c.rd.SetVersion(stomp.V12)
	b.SetBytes(int64(len(data) / 1000))
	b.ReportAllocs()
	for b.Loop() {
		if err := c.readFrame(); err != nil || c.cmd != "MESSAGE" {
			b.Fatal(err, c.cmd)
		}
	}
}

func BenchmarkReadCentrifugoPush(b *testing.B) {
	data := wsMessages(1000, func(i int) []byte {
		return []byte(`{"push":{"channel":"bench.b80bb796.group.0","pub":{"data":"` + benchBody + `","offset":` + strconv.Itoa(i+1) + `}}}`)
	})
	src := &replay{data: data}
	c := &cfConn{wr: &wsutil.Reader{Source: bufio.NewReaderSize(io.Reader(src), busyBuffer), State: ws.StateClientSide}}
	b.SetBytes(int64(len(data) / 1000))
	b.ReportAllocs()
	for b.Loop() {
		line, err := c.readLine()
		if err != nil || parseCFLine(line).kind != cfPush {
			b.Fatal(err, string(line))
		}
	}
}
