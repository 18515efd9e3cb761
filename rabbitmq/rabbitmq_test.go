package rabbitmq_test

import (
	"os"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"parley"
	"parley/parleytest"
	"parley/rabbitmq"
)

// amqpURL returns PARLEY_TEST_AMQP or skips the test.
func amqpURL(t *testing.T) string {
	t.Helper()
	url := os.Getenv("PARLEY_TEST_AMQP")
	if url == "" {
		t.Skip("PARLEY_TEST_AMQP is not set: set it to an AMQP URL (amqp://guest:guest@127.0.0.1:5672/) to run the RabbitMQ tests")
	}
	return url
}

// newCluster returns a NewBrokerFunc whose brokers share an exchange of
// their own, so that tests never see each other's queues.
func newCluster(t *testing.T) parleytest.NewBrokerFunc {
	url := amqpURL(t)
	exchange := tempExchange(t, url)
	return func(node string, h parleytest.BrokerHooks) parley.Broker {
		return mustNew(t, rabbitmq.Config{URL: url, Node: node, Exchange: exchange, Handler: h.Handler, Gone: h.Gone})
	}
}

// tempExchange names an exchange for one test and deletes it afterwards
// (the queues delete themselves when their brokers close).
func tempExchange(t *testing.T, url string) string {
	name := "parleytest." + parley.NewID()[:8]
	t.Cleanup(func() {
		conn, err := amqp.Dial(url)
		if err != nil {
			return
		}
		defer conn.Close()
		if ch, err := conn.Channel(); err == nil {
			ch.ExchangeDelete(name, false, false)
		}
	})
	return name
}

func mustNew(t *testing.T, cfg rabbitmq.Config) *rabbitmq.Broker {
	t.Helper()
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = 500 * time.Millisecond
	}
	b, err := rabbitmq.New(cfg)
	if err != nil {
		t.Fatalf("New() error = %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestConformance(t *testing.T) {
	parleytest.RunBrokerTests(t, newCluster)
}
