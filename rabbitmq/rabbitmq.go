package rabbitmq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	amqp "github.com/rabbitmq/amqp091-go"

	"parley"
)

// Config configures a Broker. Zero fields take the documented defaults.
type Config struct {
	// URL is the AMQP URL, amqp://user:pass@host:port/vhost (required).
	URL string
	// Node is this node's id (required).
	Node string
	// Handler receives the batches addressed to this node (required).
	Handler parley.BatchHandler
	// Gone, when set, hears about destinations that have no queue. It runs
	// on its own goroutine, which Close waits for.
	Gone func(node string)
	// OnConnect, when set, hears that a session has started: the first
	// connection and every reconnect, once this node's queue is bound and
	// consumed. Batches may have been lost while disconnected (beyond
	// MaxPending, or a sender that died meanwhile), so a relay checks
	// what it missed. It runs on the broker's goroutine: it must not block.
	OnConnect func()
	// Exchange names the direct exchange and prefixes the queue names.
	// Default "parley".
	Exchange string
	// Prefetch bounds the unacknowledged deliveries of the consumer.
	// Default 256.
	Prefetch int
	// QueueExpiry is how long this node's queue outlives its last consumer.
	// Default 60 s.
	QueueExpiry time.Duration
	// MaxPending bounds the batches waiting to be sent or confirmed.
	// Default 100000.
	MaxPending int
	// MinBackoff and MaxBackoff bound the pause between reconnects.
	// Default 100 ms and 5 s.
	MinBackoff, MaxBackoff time.Duration
	// CloseTimeout bounds Close's wait for unconfirmed batches. Default 2 s.
	CloseTimeout time.Duration
	// Registerer, when set, registers the broker's metrics.
	Registerer prometheus.Registerer
	// Logger logs connection changes. Default slog.Default().
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	if c.Exchange == "" {
		c.Exchange = "parley"
	}
	if c.Prefetch <= 0 {
		c.Prefetch = 256
	}
	if c.QueueExpiry <= 0 {
		c.QueueExpiry = 60 * time.Second
	}
	if c.MaxPending <= 0 {
		c.MaxPending = 100000
	}
	if c.MinBackoff <= 0 {
		c.MinBackoff = 100 * time.Millisecond
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = 5 * time.Second
	}
	if c.CloseTimeout <= 0 {
		c.CloseTimeout = 2 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// QueueName is the name of a node's queue under an exchange.
func QueueName(exchange, node string) string { return exchange + ".node." + node }

// RoutingKey is the routing key of a node's queue.
func RoutingKey(node string) string { return "node." + node }

// Broker is the RabbitMQ parley.Broker of one node. Create it with New and
// stop it with Close.
type Broker struct {
	cfg   Config
	queue string // this node's queue
	log   *slog.Logger
	m     *metrics

	stop chan struct{} // closed by Close: ends the run goroutine
	done chan struct{} // closed when the run goroutine returns
	// gone runs the Config.Gone calls; only the run goroutine adds to it,
	// so Close waits for it once done is closed.
	gone sync.WaitGroup

	mu          sync.Mutex // guards the following fields
	pending     []*outgoing
	unconfirmed map[uint64]*outgoing // by delivery tag of the current session
	connected   bool
	closing     bool
	wake        chan struct{} // signalled when pending becomes non-empty
	settled     chan struct{} // signalled when a batch is confirmed (for Close)
}

// outgoing is one batch on its way out.
type outgoing struct {
	id       string
	node     string
	body     []byte
	returned bool // the broker returned it: no queue for node
	sent     bool // published at least once (a second send is a republish)
}

var _ parley.Broker = (*Broker)(nil)

// New returns a broker that connects in the background; Ping reports when
// it is connected. It fails only on an invalid configuration.
func New(cfg Config) (*Broker, error) {
	cfg.setDefaults()
	if cfg.URL == "" || cfg.Node == "" || cfg.Handler == nil {
		return nil, errors.New("rabbitmq: URL, Node and Handler are required")
	}
	if _, err := amqp.ParseURI(cfg.URL); err != nil {
		return nil, fmt.Errorf("rabbitmq: %w", err)
	}
	b := &Broker{
		cfg:         cfg,
		queue:       QueueName(cfg.Exchange, cfg.Node),
		log:         cfg.Logger,
		m:           newMetrics(cfg.Registerer),
		stop:        make(chan struct{}),
		done:        make(chan struct{}),
		unconfirmed: map[uint64]*outgoing{},
		wake:        make(chan struct{}, 1),
		settled:     make(chan struct{}, 1),
	}
	go b.run()
	return b, nil
}

// Publish implements parley.Broker.
func (b *Broker) Publish(ctx context.Context, batch parley.Batch) error {
	if batch.Node == "" {
		return parley.Errorf(parley.CodeInvalid, "batch without a destination node")
	}
	if batch.ID == "" {
		batch.ID = parley.NewID()
	}
	body, err := json.Marshal(&batch)
	if err != nil {
		return fmt.Errorf("encode batch: %w", err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closing {
		return parley.Errorf(parley.CodeUnavailable, "broker closed")
	}
	if len(b.pending)+len(b.unconfirmed) >= b.cfg.MaxPending {
		b.m.dropped.Inc()
		return parley.Errorf(parley.CodeUnavailable, "broker backlog full (%d batches)", b.cfg.MaxPending)
	}
	b.pending = append(b.pending, &outgoing{id: batch.ID, node: batch.Node, body: body})
	b.m.backlog.Inc()
	select {
	case b.wake <- struct{}{}:
	default:
	}
	return nil
}

// Ping implements parley.Broker.
func (b *Broker) Ping(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.closing:
		return parley.Errorf(parley.CodeUnavailable, "broker closed")
	case !b.connected:
		return parley.Errorf(parley.CodeUnavailable, "not connected to RabbitMQ")
	}
	return nil
}

// Backlog returns how many batches wait to be sent or confirmed.
func (b *Broker) Backlog() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.pending) + len(b.unconfirmed)
}

// Close implements parley.Broker. It waits up to Config.CloseTimeout for
// the backlog to be confirmed, then stops consuming, deletes this node's
// queue and closes the connection. It returns once the Config.Gone calls
// under way have returned.
func (b *Broker) Close() error {
	b.mu.Lock()
	if b.closing {
		b.mu.Unlock()
		<-b.done
		b.gone.Wait()
		return nil
	}
	b.closing = true
	b.mu.Unlock()
	deadline := time.After(b.cfg.CloseTimeout)
wait:
	for b.Backlog() > 0 {
		select {
		case <-b.settled:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			break wait
		}
	}
	close(b.stop)
	<-b.done
	b.gone.Wait() // a Gone call may use what the caller closes next (cluster mode's Redis client)
	return nil
}

// decode reads a delivery's batch.
func decode(body []byte) (parley.Batch, error) {
	var batch parley.Batch
	if err := json.Unmarshal(body, &batch); err != nil {
		return batch, fmt.Errorf("decode batch: %w", err)
	}
	return batch, nil
}
