package rabbitmq_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"parley"
	"parley/rabbitmq"
)

// cpuOf returns the CPU time of a process (utime + stime), or this
// process's own when pid is "self".
func cpuOf(pid string) time.Duration {
	if pid == "self" {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * 10 * time.Millisecond // USER_HZ 100
}

// TestScalingPublish measures, for SCALING.md, one relay batch through
// RabbitMQ between two Broker of this process: the hop (Publish to the
// other node's handler) one at a time, 500 a round; then 5,000 published
// as fast as they go, with this process's CPU a batch (publish, confirm,
// consume, decode: both ends) and the broker's (its beam.smp pid in
// PARLEY_SCALING_BROKER_PID). A batch is a message with
// PARLEY_SCALING_RECIPIENTS recipients (default 83: seed 002's room over
// 3 nodes). Five rounds; it asserts nothing and runs only when asked:
//
//	PARLEY_SCALING_AMQP=amqp://guest:guest@127.0.0.1:5672/ PARLEY_SCALING_BROKER_PID=$(pgrep -f beam.smp) \
//	  go test -count=1 -run TestScalingPublish -v ./rabbitmq/
func TestScalingPublish(t *testing.T) {
	url := os.Getenv("PARLEY_SCALING_AMQP")
	if url == "" {
		t.Skip("PARLEY_SCALING_AMQP is not set: a measurement for SCALING.md")
	}
	nr, _ := strconv.Atoi(os.Getenv("PARLEY_SCALING_RECIPIENTS"))
	if nr == 0 {
		nr = 83
	}
	exchange := "parleyscaling" + parley.NewID()[:6]
	t.Cleanup(func() { // last, after the brokers' Close: the exchange is durable
		if c, err := amqp.Dial(url); err == nil {
			if ch, err := c.Channel(); err == nil {
				ch.ExchangeDelete(exchange, false, false)
			}
			c.Close()
		}
	})
	var got atomic.Int64
	recv := make(chan time.Time, 1)
	open := func(node string, h parley.BatchHandler) *rabbitmq.Broker {
		b, err := rabbitmq.New(rabbitmq.Config{URL: url, Node: node, Exchange: exchange, Handler: h, QueueExpiry: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}
	a := open("a", func(parley.Batch) {})
	open("b", func(parley.Batch) {
		got.Add(1)
		select {
		case recv <- time.Now():
		default:
		}
	})
	time.Sleep(time.Second) // both queues bound
	recipients := make([]string, nr)
	for i := range recipients {
		recipients[i] = parley.NewID()
	}
	batch := parley.Batch{Node: "b", Event: parley.Event{Kind: parley.EventMessage, Room: parley.Room{ID: parley.NewID()},
		Message: parley.Message{ID: parley.NewID(), Seq: 1, SenderID: parley.NewID(), SenderName: "ann", Body: strings.Repeat("x", 60), SentAt: time.Now()}},
		Recipients: recipients}
	body, _ := json.Marshal(batch)
	broker := os.Getenv("PARLEY_SCALING_BROKER_PID")
	ctx := context.Background()
	for round := 1; round <= 5; round++ {
		var hop []time.Duration
		for range 500 {
			t0 := time.Now()
			if err := a.Publish(ctx, batch); err != nil {
				t.Fatal(err)
			}
			hop = append(hop, (<-recv).Sub(t0))
		}
		slices.Sort(hop)
		const n = 5000
		start := got.Load()
		c0, b0, w0 := cpuOf("self"), cpuOf(broker), time.Now()
		for range n {
			for a.Publish(ctx, batch) != nil { // backlog full
				time.Sleep(time.Millisecond)
			}
		}
		for got.Load() < start+n {
			time.Sleep(time.Millisecond)
		}
		el := time.Since(w0)
		c1, b1 := cpuOf("self"), cpuOf(broker)
		fmt.Printf("recipients %d, %d B: round %d: hop p50 %v p99 %v | %d batches %.0f/s, parley CPU %v a batch, broker CPU %v a batch\n",
			nr, len(body), round, hop[len(hop)/2], hop[len(hop)*99/100], n, n/el.Seconds(), (c1-c0)/n, (b1-b0)/n)
	}
}
