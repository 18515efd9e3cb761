package servicetest

import (
	"bytes"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// Proxy is a TCP proxy on 127.0.0.1 to a service, which can hold back
// what the clients send: it makes the service slow for the clients that
// connect through it only.
type Proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex    // guards the following fields
	delay  time.Duration // how long a chunk from a client waits
	match  []byte        // only the chunks that contain it wait; nil: all
	hold   [][]byte      // a chunk that contains one of them stops its connection's sends
	conns  []net.Conn
	wg     sync.WaitGroup
}

// NewProxy starts a proxy to target (host:port), closed at the end of the
// test.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetDelay makes every chunk a client sends from now on that contains
// match (every chunk, when match is nil) wait d before it goes on to the
// service (0: none); a connection's chunks stay in order. For example
// match "eval" slows the Lua scripts of a Redis client, and not its other
// commands.
func (p *Proxy) SetDelay(d time.Duration, match []byte) {
	p.mu.Lock()
	p.delay, p.match = d, match
	p.mu.Unlock()
}

// Hold makes a client connection that sends a chunk containing one of
// matches from now on send nothing more to the service: that chunk and
// every later one are dropped, and the client waits for answers that
// never come, as if the service had stopped for it alone. For example
// "hot:l:" holds back a Redis client's writes of the keys with that
// prefix and what follows them, and passes its other connections' calls.
func (p *Proxy) Hold(matches ...[]byte) {
	p.mu.Lock()
	p.hold = append(p.hold, matches...)
	p.mu.Unlock()
}

// holds reports whether chunk stops its connection (Hold).
func (p *Proxy) holds(chunk []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range p.hold {
		if bytes.Contains(chunk, m) {
			return true
		}
	}
	return false
}

// wait is how long a chunk waits.
func (p *Proxy) wait(chunk []byte) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.match != nil && !bytes.Contains(chunk, p.match) {
		return 0
	}
	return p.delay
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		p.wg.Go(func() { p.delayed(s, c); s.Close() })
		p.wg.Go(func() { io.Copy(c, s); c.Close() })
	}
}

// delayed copies from src to dst, each chunk after the delay, until a
// chunk is held (Hold).
func (p *Proxy) delayed(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	held := false
	for {
		n, err := src.Read(buf)
		if n > 0 && !held && p.holds(buf[:n]) {
			held = true
		}
		if n > 0 && !held {
			if d := p.wait(buf[:n]); d > 0 {
				time.Sleep(d)
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *Proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
