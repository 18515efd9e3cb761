package loadgen

import (
	"strconv"
	"time"
)

// What a messaging client puts on and takes off the wire: the sends,
// the frames read and the deliveries timed from them.

// read handles the frames of one client until its connection closes.
func (m *msgRun) read(c *msgClient) {
	defer m.readers.Done()
	if c.cf != nil {
		m.readCentrifugo(c)
		return
	}
	for {
		if err := c.conn.readFrame(); err != nil {
			if !m.closing.Load() {
				m.r.rec.Error(c.idx, "connection lost: "+errKind(err))
			}
			return
		}
		switch c.conn.cmd {
		case "MESSAGE":
			if c.conn.event {
				c.events.Add(1)
				continue
			}
			if c.conn.seq > c.maxSeq.Load() {
				c.maxSeq.Store(c.conn.seq)
			}
			m.deliver(c, c.conn.body)
		case "RECEIPT":
			id, err := strconv.ParseInt(string(c.conn.receiptID), 10, 64)
			if err != nil {
				continue
			}
			c.mu.Lock()
			at, ok := c.pending[id]
			delete(c.pending, id)
			c.mu.Unlock()
			if !ok {
				continue
			}
			m.ack.Record(c.idx, time.Duration(m.now()-at))
			m.accepted.Add(1)
			m.expected.Add(m.subs[c.room])
			if c.readReq != nil {
				select {
				case c.readReq <- struct{}{}:
				default: // one is due already: it will PUT the newest seq
				}
			}
			select {
			case c.acked <- struct{}{}:
			default:
			}
		case "ERROR":
			m.r.rec.Error(c.idx, "STOMP ERROR: "+c.conn.errMsg)
		}
	}
}

// deliver accounts one MESSAGE body "sentNs:sender:n:padding".
func (m *msgRun) deliver(c *msgClient, body []byte) {
	now := m.now()
	sent, rest := parseField(body)
	sender, rest := parseField(rest)
	n, _ := parseField(rest)
	c.received.Add(1)
	c.lastDelivery.Store(now)
	if sender < 0 || sender >= int64(len(c.last)) || n <= 0 {
		m.r.rec.Error(c.idx, "foreign message")
		return
	}
	if int32(n) <= c.last[sender] {
		m.dups.Add(1)
	} else {
		c.last[sender] = int32(n)
	}
	if int(sender) != c.idx {
		m.r.rec.Record(c.idx, time.Duration(now-sent))
	}
}

// parseField parses a decimal number up to the next ':'; -1 when there is
// none.
func parseField(b []byte) (int64, []byte) {
	var v int64
	for i, ch := range b {
		if ch == ':' {
			if i == 0 {
				return -1, b[i+1:]
			}
			return v, b[i+1:]
		}
		if ch < '0' || ch > '9' {
			return -1, nil
		}
		v = v*10 + int64(ch-'0')
	}
	return -1, nil
}

// body builds a message body of at least the payload size carrying the
// send time, the sender and the message number.
func (m *msgRun) body(buf []byte, sender, n int) []byte {
	buf = buf[:0]
	buf = strconv.AppendInt(buf, m.now(), 10)
	buf = append(buf, ':')
	buf = strconv.AppendInt(buf, int64(sender), 10)
	buf = append(buf, ':')
	buf = strconv.AppendInt(buf, int64(n), 10)
	buf = append(buf, ':')
	for len(buf) < m.r.o.Payload {
		buf = append(buf, 'x')
	}
	return buf
}

// send writes message n of client c.
func (m *msgRun) send(c *msgClient, n int, head, body []byte) ([]byte, []byte, error) {
	if c.cf != nil {
		return m.sendCentrifugo(c, n, head, body)
	}
	body = m.body(body, c.idx, n)
	id := int64(n)
	head = head[:0]
	head = append(head, "SEND\ndestination:"...)
	head = append(head, c.sendDest...)
	head = append(head, "\ncontent-type:text/plain\nreceipt:"...)
	head = strconv.AppendInt(head, id, 10)
	head = append(head, "\ncontent-length:"...)
	head = strconv.AppendInt(head, int64(len(body)), 10)
	head = append(head, '\n')
	if c.clientID != "" {
		head = append(head, "client-id:"...)
		head = append(head, c.clientID...)
		head = strconv.AppendInt(head, id, 10)
		head = append(head, '\n')
	}
	c.mu.Lock()
	c.pending[id] = m.now()
	c.mu.Unlock()
	m.sent.Add(1)
	return head, body, c.conn.writeFrame(head, body)
}
