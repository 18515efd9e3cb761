package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"parley"
	"parley/postgres"
	"parley/rest"
	"parley/sqlite"
	"parley/webhook"
)

// Both durable stores keep webhooks and deliver them.
var (
	_ hookStore = (*sqlite.Store)(nil)
	_ hookStore = (*postgres.Store)(nil)
)

// hookStore is a durable store, which keeps webhooks (the admin commands'
// part of it beside what the deliveries read).
type hookStore interface {
	webhook.Store
	CreateWebhook(ctx context.Context, h parley.Webhook) (parley.Webhook, error)
	ResumeWebhook(ctx context.Context, name string) (parley.Webhook, error)
	RemoveWebhook(ctx context.Context, name string) error
}

// webhookConfig is the serve flags of outgoing webhooks.
type webhookConfig struct {
	Allow       string // comma-separated hosts, addresses and CIDRs a webhook may reach despite being internal
	Poll        time.Duration
	Lease       time.Duration
	Timeout     time.Duration
	Concurrency int
	MaxFailures int
	BackoffMin  time.Duration
	BackoffMax  time.Duration
}

const webhookAllowHelp = "comma-separated host names, addresses and CIDRs that webhooks may reach although loopback, private or link-local (refused by default, also after DNS resolution)"

// webhookFlags registers the serve flags of outgoing webhooks.
func (c *Config) webhookFlags(fs *flag.FlagSet) {
	w := &c.Webhooks
	fs.StringVar(&w.Allow, "webhook-allow", "", webhookAllowHelp)
	fs.DurationVar(&w.Poll, "webhook-poll", webhook.DefaultPoll, "how often a node looks for new events of the webhooks it delivers, and for webhooks to take over")
	fs.DurationVar(&w.Lease, "webhook-lease", webhook.DefaultLeaseTTL, "how long a node's lease on a webhook's deliveries lasts unless renewed: a dead node's webhooks move to another within this plus --webhook-poll")
	fs.DurationVar(&w.Timeout, "webhook-timeout", webhook.DefaultTimeout, "most time a webhook delivery may take (connect, send, answer) before it counts as failed")
	fs.IntVar(&w.Concurrency, "webhook-concurrency", webhook.DefaultConcurrency, "rooms of one webhook delivered at once (each room's events one at a time, in order)")
	fs.IntVar(&w.MaxFailures, "webhook-max-failures", webhook.DefaultMaxFailures, "consecutive failed deliveries that pause a webhook until parley webhook resume")
	fs.DurationVar(&w.BackoffMin, "webhook-backoff-min", webhook.DefaultMinBackoff, "wait before the first retry of a failed delivery, doubled at each failure, with jitter")
	fs.DurationVar(&w.BackoffMax, "webhook-backoff-max", webhook.DefaultMaxBackoff, "longest wait between retries of a failed delivery")
}

// startWebhooks starts the deliveries of outgoing webhooks on the durable
// store db: every node runs them, and each webhook is delivered by the
// one node that holds its lease.
func (m *Main) startWebhooks(db parley.Store) error {
	st, ok := db.(hookStore)
	if !ok {
		return nil // an in-memory store of tests: no webhooks
	}
	cfg := m.Config
	_, f, err := cfg.webhookAdmin(db)
	if err != nil {
		return err
	}
	node := cfg.NodeID // chosen by Open
	w := cfg.Webhooks
	m.hooks, err = webhook.Start(webhook.Config{
		Store: st, Node: node, Filter: f, Poll: w.Poll, LeaseTTL: w.Lease, Timeout: w.Timeout,
		Concurrency: w.Concurrency, MaxFailures: w.MaxFailures, MinBackoff: w.BackoffMin, MaxBackoff: w.BackoffMax,
		Registerer: m.registry, Logger: slog.Default(),
	})
	return err
}

// webhookAdmin returns what the REST API's webhook routes manage on the
// durable store db (nil for another: no webhooks) and the filter of
// --webhook-allow that checks a new webhook's URL.
func (c *Config) webhookAdmin(db parley.Store) (rest.WebhookAdmin, *webhook.Filter, error) {
	f, err := webhook.NewFilter(strings.Split(c.Webhooks.Allow, ","))
	if err != nil {
		return nil, nil, err
	}
	st, ok := db.(hookStore)
	if !ok {
		return nil, f, nil
	}
	return st, f, nil
}

// runWebhook is `parley webhook add|list|resume|remove`: the outgoing
// webhooks (docs/webhooks.md). Like `parley apikey` it writes to the
// store of --store and --data and may run beside live nodes, which pick
// a change up within --webhook-poll.
func runWebhook(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	const usage = "usage: parley webhook add --name NAME --url URL [--events KIND,...] [--room ROOM] [--secret SECRET]\n" +
		"       parley webhook list\n       parley webhook resume --name NAME\n       parley webhook remove --name NAME\n" +
		"KIND: message.sent, message.edited, message.deleted, member.joined, member.left, member.removed,\n" +
		"      member.banned, member.role, room.created, room.updated (default: all)\n"
	verbs := []string{"add", "list", "resume", "remove"}
	if len(args) == 0 || !slices.Contains(verbs, args[0]) {
		fmt.Fprint(stderr, usage)
		return errors.New("want webhook add, list, resume or remove")
	}
	verb := args[0]
	fs := flag.NewFlagSet("parley webhook "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var store, data, name, target, events, roomID, secret, allow string
	fs.StringVar(&store, "store", "", "store: empty for SQLite in --data, or postgres://user@host:port/db")
	fs.StringVar(&data, "data", "./data", "data directory of the embedded SQLite store")
	if verb != "list" {
		fs.StringVar(&name, "name", "", "the webhook's name (3 to 32 of A-Z a-z 0-9 _ . -), unique")
	}
	if verb == "add" {
		fs.StringVar(&target, "url", "", "the receiver: an http:// or https:// URL; each event is POSTed to it")
		fs.StringVar(&events, "events", strings.Join(parley.HookKinds, ","), "comma-separated event kinds: "+strings.Join(parley.HookKinds, ", "))
		fs.StringVar(&roomID, "room", "", "deliver this room's events only (default: every room)")
		fs.StringVar(&secret, "secret", "", "the signing secret, at least 16 bytes (default: a random one, printed once)")
		fs.StringVar(&allow, "webhook-allow", "", webhookAllowHelp+": the URL is checked against it now, and by every node at each connection")
	}
	fs.String("config", "", configHelp)
	setUsage(fs, stderr, usage+"\nOutgoing webhooks: signed POSTs of room events, at least once, in room order.\nEvery flag can also be set by the environment variable named beside it.\n\n")
	if err := parseFlags(fs, args[1:], os.Getenv); err != nil {
		return err
	}
	if verb != "list" && name == "" {
		return errors.New("--name is required: 3 to 32 of A-Z a-z 0-9 _ . -")
	}
	var h parley.Webhook
	if verb == "add" {
		var err error
		if h, err = newWebhook(name, target, events, roomID, secret, allow); err != nil {
			return err
		}
	}
	keys, closeStore, err := openKeyStore(ctx, store, data)
	if err != nil {
		return err
	}
	defer closeStore()
	st, ok := keys.(hookStore)
	if !ok {
		return fmt.Errorf("the store %T keeps no webhooks", keys)
	}
	switch verb {
	case "add":
		if _, err := st.CreateWebhook(ctx, h); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "added webhook %q to %s for %s; its signing secret:\n", h.Name, h.URL, strings.Join(h.Kinds, ","))
		if secret == "" {
			fmt.Fprintln(stdout, h.Secret)
		} else {
			fmt.Fprintln(stdout, "(the secret given)")
		}
	case "list":
		all, err := st.Webhooks(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tURL\tEVENTS\tROOM\tPAUSED")
		for _, h := range all {
			room, paused := h.RoomID, "-"
			if room == "" {
				room = "*"
			}
			if h.PausedAt != nil {
				paused = h.PausedAt.Format(time.RFC3339) + " " + h.PausedReason
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", h.Name, h.URL, strings.Join(h.Kinds, ","), room, paused)
		}
		return tw.Flush()
	case "resume":
		h, err := st.ResumeWebhook(ctx, name)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "resumed webhook %q: it delivers again from where it stopped\n", h.Name)
	case "remove":
		if err := st.RemoveWebhook(ctx, name); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "removed webhook %q\n", name)
	}
	return nil
}

// newWebhook checks the flags of `parley webhook add` and returns the
// webhook they ask for, with a random secret when none is given.
func newWebhook(name, target, events, roomID, secret, allow string) (parley.Webhook, error) {
	f, err := webhook.NewFilter(strings.Split(allow, ","))
	if err != nil {
		return parley.Webhook{}, err
	}
	return webhook.New(name, target, strings.Split(events, ","), roomID, secret, f)
}
