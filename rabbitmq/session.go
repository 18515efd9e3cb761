package rabbitmq

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// session is one connection to RabbitMQ and its two channels.
type session struct {
	conn       *amqp.Connection
	pub        *amqp.Channel // confirm mode
	cons       *amqp.Channel // prefetch, manual acks
	deliveries <-chan amqp.Delivery
	consumer   string        // consumer tag
	nextTag    uint64        // delivery tag of the next publish; publisher only
	failed     chan struct{} // closed by a goroutine that sees the session break
	failOnce   sync.Once
}

func (s *session) fail() { s.failOnce.Do(func() { close(s.failed) }) }

// run connects, serves and reconnects until Close. It is the goroutine
// New starts and Close stops.
func (b *Broker) run() {
	defer close(b.done)
	backoff := b.cfg.MinBackoff
	for attempt := 0; ; attempt++ {
		s, err := b.connect()
		if err != nil {
			b.log.Warn("rabbitmq: connect", "node", b.cfg.Node, "err", err, "retry_in", backoff)
		} else {
			if attempt > 0 {
				b.m.reconnects.Inc()
				b.log.Info("rabbitmq: reconnected", "node", b.cfg.Node)
			}
			backoff = b.cfg.MinBackoff
			if stopped := b.serve(s); stopped {
				return
			}
		}
		pause := backoff/2 + rand.N(backoff/2+1)
		select {
		case <-b.stop:
			return
		case <-time.After(pause):
		}
		backoff = min(2*backoff, b.cfg.MaxBackoff)
	}
}

// connect dials and declares the topology: the exchange, this node's
// queue and its binding, and starts consuming.
func (b *Broker) connect() (*session, error) {
	conn, err := amqp.DialConfig(b.cfg.URL, amqp.Config{
		Heartbeat:  10 * time.Second,
		Locale:     "en_US",
		Dial:       amqp.DefaultDial(15 * time.Second),
		Properties: amqp.Table{"connection_name": "parley node " + b.cfg.Node},
	})
	if err != nil {
		return nil, fmt.Errorf("dial: %w", err)
	}
	s := &session{conn: conn, consumer: "parley-" + b.cfg.Node, nextTag: 1, failed: make(chan struct{})}
	if err := b.setup(s); err != nil {
		conn.Close()
		return nil, err
	}
	return s, nil
}

func (b *Broker) setup(s *session) error {
	var err error
	if s.pub, err = s.conn.Channel(); err != nil {
		return fmt.Errorf("open channel: %w", err)
	}
	if err := s.pub.Confirm(false); err != nil {
		return fmt.Errorf("confirm mode: %w", err)
	}
	if err := s.pub.ExchangeDeclare(b.cfg.Exchange, amqp.ExchangeDirect, true, false, false, false, nil); err != nil {
		return fmt.Errorf("declare exchange: %w", err)
	}
	if s.cons, err = s.conn.Channel(); err != nil {
		return fmt.Errorf("open channel: %w", err)
	}
	if err := s.cons.Qos(b.cfg.Prefetch, 0, false); err != nil {
		return fmt.Errorf("qos: %w", err)
	}
	args := amqp.Table{"x-expires": int64(b.cfg.QueueExpiry / time.Millisecond)}
	if _, err := s.cons.QueueDeclare(b.queue, true, false, false, false, args); err != nil {
		return fmt.Errorf("declare queue: %w", err)
	}
	if err := s.cons.QueueBind(b.queue, RoutingKey(b.cfg.Node), b.cfg.Exchange, false, nil); err != nil {
		return fmt.Errorf("bind queue: %w", err)
	}
	if s.deliveries, err = s.cons.Consume(b.queue, s.consumer, false, false, false, false, nil); err != nil {
		return fmt.Errorf("consume: %w", err)
	}
	return nil
}

// serve runs a session until it breaks (false) or Close stops it (true).
func (b *Broker) serve(s *session) (stopped bool) {
	confirms := s.pub.NotifyPublish(make(chan amqp.Confirmation, 1024))
	returns := s.pub.NotifyReturn(make(chan amqp.Return, 1024))
	connClosed := s.conn.NotifyClose(make(chan *amqp.Error, 1))
	pubClosed := s.pub.NotifyClose(make(chan *amqp.Error, 1))
	consClosed := s.cons.NotifyClose(make(chan *amqp.Error, 1))

	b.mu.Lock()
	b.connected = true
	b.mu.Unlock()
	b.m.connected.Set(1)
	if b.cfg.OnConnect != nil {
		b.cfg.OnConnect()
	}

	var wg sync.WaitGroup
	consumerDone := make(chan struct{})
	wg.Go(func() { b.publisher(s) })
	wg.Go(func() { b.confirmer(s, confirms, returns) })
	go func() {
		defer close(consumerDone)
		b.consume(s)
	}()

	var reason any
	select {
	case <-b.stop:
		stopped = true
	case e := <-connClosed:
		reason = e
	case e := <-pubClosed:
		reason = e
	case e := <-consClosed:
		reason = e
	case <-s.failed:
		reason = "publish failed"
	}
	b.mu.Lock()
	b.connected = false
	b.mu.Unlock()
	b.m.connected.Set(0)
	if stopped {
		// Stop the consumer first so that no batch is taken and left
		// unacknowledged, then remove the queue: batches still addressed
		// to this node come back to their senders as gone.
		s.cons.Cancel(s.consumer, false)
		<-consumerDone
		s.pub.QueueDelete(b.queue, false, false, false)
	} else {
		b.log.Warn("rabbitmq: connection lost", "node", b.cfg.Node, "reason", fmt.Sprint(reason))
	}
	s.fail()
	s.conn.Close()
	wg.Wait()
	<-consumerDone
	b.requeueUnconfirmed()
	return stopped
}

// requeueUnconfirmed puts the batches of a dead session back at the front
// of the queue, in the order they were first published.
func (b *Broker) requeueUnconfirmed() {
	b.mu.Lock()
	defer b.mu.Unlock()
	tags := make([]uint64, 0, len(b.unconfirmed))
	for tag := range b.unconfirmed {
		tags = append(tags, tag)
	}
	slices.Sort(tags)
	back := make([]*outgoing, 0, len(tags)+len(b.pending))
	for _, tag := range tags {
		back = append(back, b.unconfirmed[tag])
	}
	b.pending = append(back, b.pending...)
	clear(b.unconfirmed)
	if len(b.pending) > 0 {
		select {
		case b.wake <- struct{}{}:
		default:
		}
	}
}

// publisher sends the queued batches until the session ends.
func (b *Broker) publisher(s *session) {
	for {
		for {
			b.mu.Lock()
			batch := b.pending
			b.pending = nil
			for _, o := range batch {
				b.unconfirmed[s.nextTag] = o
				s.nextTag++
			}
			b.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			for _, o := range batch {
				err := s.pub.PublishWithContext(context.Background(), b.cfg.Exchange, RoutingKey(o.node), true, false,
					amqp.Publishing{ContentType: "application/json", MessageId: o.id, Body: o.body})
				if err != nil {
					s.fail()
					return
				}
				if o.sent {
					b.m.republishes.Inc()
				} else {
					o.sent = true
					b.m.publishes.Inc()
				}
			}
		}
		select {
		case <-s.failed:
			return
		case <-b.wake:
		}
	}
}

// confirmer settles batches as the broker confirms them, matching returns
// to their batch by message-id. A return arrives before the ack of its
// batch, on the same connection reader, so the returns channel is drained
// before each confirm is handled.
func (b *Broker) confirmer(s *session, confirms <-chan amqp.Confirmation, returns <-chan amqp.Return) {
	returned := map[string]bool{}
	onReturn := func(r amqp.Return) {
		returned[r.MessageId] = true
	}
	for {
		select {
		case r, ok := <-returns:
			if !ok {
				returns = nil
				continue
			}
			onReturn(r)
		case c, ok := <-confirms:
			if !ok {
				return
			}
		drain:
			for returns != nil {
				select {
				case r, ok := <-returns:
					if !ok {
						returns = nil
						break drain
					}
					onReturn(r)
				default:
					break drain
				}
			}
			b.settle(c, returned)
		}
	}
}

// settle handles one publisher confirm.
func (b *Broker) settle(c amqp.Confirmation, returned map[string]bool) {
	b.mu.Lock()
	o := b.unconfirmed[c.DeliveryTag]
	delete(b.unconfirmed, c.DeliveryTag)
	gone := false
	switch {
	case o == nil:
	case returned[o.id]:
		delete(returned, o.id)
		gone = true
		b.m.backlog.Dec()
	case !c.Ack:
		b.m.nacks.Inc()
		b.pending = append([]*outgoing{o}, b.pending...)
		select {
		case b.wake <- struct{}{}:
		default:
		}
	default:
		b.m.backlog.Dec()
	}
	b.mu.Unlock()
	select {
	case b.settled <- struct{}{}:
	default:
	}
	if gone {
		b.m.returns.Inc()
		if b.cfg.Gone != nil {
			b.gone.Go(func() { b.cfg.Gone(o.node) })
		}
	}
}

// consume hands each delivery to the handler, then acknowledges it.
func (b *Broker) consume(s *session) {
	for d := range s.deliveries {
		batch, err := decode(d.Body)
		if err != nil {
			b.m.rejected.Inc()
			b.log.Error("rabbitmq: reject delivery", "node", b.cfg.Node, "err", err)
			d.Reject(false)
			continue
		}
		b.cfg.Handler(batch)
		b.m.deliveries.Inc()
		d.Ack(false)
	}
}
