package main

import (
	"fmt"
	"io"
	"log/slog"
	"net/url"
)

// newLogger is the process's logger: format text or json, on w.
func newLogger(w io.Writer, format string, level slog.Level) (*slog.Logger, error) {
	opts := &slog.HandlerOptions{Level: level}
	switch format {
	case "text", "":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format must be text or json, not %q", format)
}

// redactURL is a service URL fit for the log: its password, if any, in
// the user info or as a password query parameter (libpq's), replaced by
// xxxxx (a URL that does not parse is left out whole).
func redactURL(s string) string {
	if s == "" {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// servicesAttrs are the services a node uses, for its "parley serving"
// line: the store, and in cluster mode the broker and Redis, with no
// password.
func (c Config) servicesAttrs() []any {
	if c.Store == "" {
		return []any{"store", "sqlite:" + sqliteFile(c.Data)}
	}
	attrs := []any{"store", redactURL(c.Store)}
	if c.Broker != "" {
		attrs = append(attrs, "broker", redactURL(c.Broker))
	}
	if c.Redis != "" {
		attrs = append(attrs, "redis", redactURL(c.Redis), "redis_prefix", c.RedisPrefix)
	}
	return attrs
}
