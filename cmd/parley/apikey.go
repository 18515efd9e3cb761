package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"parley"
	"parley/chat"
	"parley/postgres"
	"parley/sqlite"
)

// Both durable stores keep API keys.
var (
	_ chat.APIKeys = (*sqlite.Store)(nil)
	_ chat.APIKeys = (*postgres.Store)(nil)
)

// runAPIKey is `parley apikey create|list|revoke`: server API keys of bot
// accounts (chat/apikeys.go). It writes to the store that `parley serve`
// with the same --store and --data opens, and may run beside a live node:
// a SQLite node's database takes a second writer (SQLite's locks order
// the two; each waits up to the busy timeout), and every node looks a key
// up in the store on each use, so a new key works and a revoked one is
// refused at once; the nodes end a revoked key's live STOMP sessions
// within --apikey-watch.
func runAPIKey(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	const usage = "usage: parley apikey create --name NAME --scopes post,rooms,history,moderate [--bot NAME] [--room ROOM]\n" +
		"       parley apikey list\n       parley apikey revoke --name NAME\n"
	if len(args) == 0 || (args[0] != "create" && args[0] != "list" && args[0] != "revoke") {
		fmt.Fprint(stderr, usage)
		return errors.New("want apikey create, list or revoke")
	}
	verb := args[0]
	fs := flag.NewFlagSet("parley apikey "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var store, data, name, scopes, bot, roomID string
	fs.StringVar(&store, "store", "", "store: empty for SQLite in --data, or postgres://user@host:port/db")
	fs.StringVar(&data, "data", "./data", "data directory of the embedded SQLite store")
	if verb != "list" {
		fs.StringVar(&name, "name", "", "the key's name (3 to 32 of A-Z a-z 0-9 _ . -), unique; the log names each call by it")
	}
	if verb == "create" {
		fs.StringVar(&scopes, "scopes", "", "comma-separated scopes: "+strings.Join(parley.Scopes, ", "))
		fs.StringVar(&bot, "bot", "", "the bot account the key acts as, made when new (default: the key's name)")
		fs.StringVar(&roomID, "room", "", "bind the key to this room (its bot joins it): an incoming webhook, POST /api/hooks/{key}")
	}
	fs.String("config", "", configHelp)
	setUsage(fs, stderr, usage+"\nServer API keys of bot accounts: shown once, stored hashed.\nEvery flag can also be set by the environment variable named beside it.\n\n")
	if err := parseFlags(fs, args[1:], os.Getenv); err != nil {
		return err
	}
	if verb != "list" && name == "" {
		return errors.New("--name is required")
	}
	keys, closeStore, err := openKeyStore(ctx, store, data)
	if err != nil {
		return err
	}
	defer closeStore()
	svc := chat.New(chat.Config{Store: keys.(parley.Store), Keys: keys})
	switch verb {
	case "create":
		if bot == "" {
			bot = name
		}
		var list []string
		for _, s := range strings.Split(scopes, ",") {
			if s = strings.TrimSpace(s); s != "" {
				list = append(list, s)
			}
		}
		token, k, u, err := svc.CreateAPIKey(ctx, name, list, bot, roomID)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "created API key %q for the bot %q (%s), scopes %s; it is shown once:\n", k.Name, u.Name, u.ID, strings.Join(k.Scopes, ","))
		if k.RoomID != "" {
			fmt.Fprintf(stderr, "it acts in room %s only; its incoming webhook is POST /api/hooks/<the key>\n", k.RoomID)
		}
		fmt.Fprintln(stdout, token)
	case "list":
		all, err := svc.ListAPIKeys(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tBOT\tSCOPES\tCREATED\tREVOKED")
		for _, k := range all {
			revoked := "-"
			if k.RevokedAt != nil {
				revoked = k.RevokedAt.Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", k.Name, k.UserID, strings.Join(k.Scopes, ","), k.CreatedAt.Format(time.RFC3339), revoked)
		}
		return tw.Flush()
	case "revoke":
		k, err := svc.RevokeAPIKey(ctx, name)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "revoked API key %q at %s\n", k.Name, k.RevokedAt.Format(time.RFC3339))
	}
	return nil
}

// keyStore is a durable store, which keeps API keys.
type keyStore interface {
	chat.APIKeys
	parley.Store
}

// openKeyStore opens the store of --store and --data for `parley apikey`,
// beside a running node or not (see runAPIKey).
func openKeyStore(ctx context.Context, store, data string) (keyStore, func(), error) {
	switch {
	case isPostgres(store):
		db, err := postgres.Open(ctx, postgres.Config{URL: store, LivenessTimeout: -1})
		if err != nil {
			return nil, nil, err
		}
		return db, func() { db.Close() }, nil
	case store == "":
		path := sqliteFile(data)
		if _, err := os.Stat(path); err != nil {
			return nil, nil, fmt.Errorf("no Parley database in --data %s: %w", data, err)
		}
		db, err := sqlite.Open(ctx, sqlite.Config{Path: path})
		if err != nil {
			return nil, nil, err
		}
		return db, func() { db.Close() }, nil
	default:
		return nil, nil, fmt.Errorf("--store %q: want empty (SQLite) or postgres://…", store)
	}
}

// keysOf is what keeps API keys in db: both durable stores do; nil for
// another (in-memory tests): API keys are then unknown tokens.
func keysOf(db parley.Store) chat.APIKeys {
	k, _ := db.(chat.APIKeys)
	return k
}

// apiKeyFlags registers the flags of API keys.
func (c *Config) apiKeyFlags(fs *flag.FlagSet) {
	fs.DurationVar(&c.APIKeyWatch, "apikey-watch", chat.DefaultKeyWatchEvery,
		"how often the node looks for API keys revoked elsewhere (parley apikey revoke, another node) to end their live STOMP sessions")
	fs.Float64Var(&c.APIKeyRate, "apikey-rate", 50,
		"REST calls per second an API key may sustain, on every route (bursts of twice that), else 429 with Retry-After; beside its bot's per-user limits; counted per node, or over the cluster in cluster mode; 0: no limit")
}
