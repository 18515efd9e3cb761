package port

import (
	"fmt"
	"strings"
	"time"
)

// kind is how a column's value is stored in each store.
type kind uint8

const (
	kText    kind = iota // TEXT / text
	kOptText             // TEXT or NULL / text or NULL
	kInt                 // INTEGER / integer, bigint
	kBlob                // BLOB / bytea
	kTime                // INTEGER unix µs / timestamptz
	kOptTime             // INTEGER unix µs or NULL / timestamptz or NULL
	kBool                // INTEGER 0 or 1 / boolean
	kOptInt              // INTEGER or NULL / bigint or NULL
)

// column is one column of a ported table, of the same name in both stores.
type column struct {
	name string
	kind kind
}

// table is one table as the port copies and checks it: every column of
// the SQLite table that the PostgreSQL one has too, the key first (the
// order of the copy, and of a resumed copy's cursor).
type table struct {
	name string
	cols []column
	nkey int  // the first nkey columns are the primary key
	room bool // rows belong to a room (column 0): checked room by room
}

// tables are copied in this order, which their foreign keys in
// PostgreSQL need (users, then tokens; rooms, then API keys, members
// and bans). Every table and column of both schemas is here or in
// notCopied (TestTablesCoverSchemas).
// messages comes last: it is nearly all of the work, and a progress line
// counts it against a total known from the start.
var tables = []table{
	{name: "users", nkey: 1, cols: []column{
		{"id", kText}, {"name", kText}, {"password_hash", kBlob}, {"created_at", kTime}}},
	{name: "tokens", nkey: 1, cols: []column{
		{"hash", kBlob}, {"user_id", kText}, {"created_at", kTime}, {"expires_at", kTime}}},
	{name: "rooms", nkey: 1, cols: []column{
		{"id", kText}, {"kind", kText}, {"title", kText}, {"capacity", kInt}, {"member_count", kInt},
		{"last_seq", kInt}, {"last_change", kInt}, {"last_activity_at", kTime}, {"created_at", kTime},
		{"direct_key", kOptText}, {"retention_seconds", kInt}, {"last_event", kInt}}},
	{name: "api_keys", nkey: 1, cols: []column{
		{"id", kText}, {"name", kText}, {"user_id", kText}, {"room_id", kOptText}, {"hash", kBlob}, {"scopes", kText},
		{"created_at", kTime}, {"revoked_at", kOptTime}}},
	{name: "members", nkey: 2, cols: []column{
		{"room_id", kText}, {"user_id", kText}, {"role", kText}, {"read_seq", kInt}, {"joined_at", kTime},
		{"notify", kText}}},
	{name: "bans", nkey: 2, cols: []column{
		{"room_id", kText}, {"user_id", kText}, {"actor_id", kText}, {"banned_at", kTime}}},
	{name: "change_keys", nkey: 3, cols: []column{
		{"room_id", kText}, {"user_id", kText}, {"client_id", kText}, {"seq", kInt}, {"deleted", kBool}, {"change", kInt}}},
	{name: "name_holds", nkey: 1, cols: []column{
		{"name", kText}, {"until", kTime}}},
	// Outgoing webhooks, then their positions (a foreign key): the seqs,
	// change and event numbers are carried, so a webhook resumes where it
	// was; and the member and room events the webhooks deliver.
	{name: "webhooks", nkey: 1, cols: []column{
		{"id", kText}, {"name", kText}, {"url", kText}, {"secret", kText}, {"kinds", kText}, {"room_id", kOptText},
		{"created_at", kTime}, {"paused_at", kOptTime}, {"paused_reason", kText},
		{"lease_owner", kText}, {"lease_until", kTime}, {"lease_token", kInt}}},
	{name: "webhook_cursors", nkey: 2, cols: []column{
		{"webhook_id", kText}, {"room_id", kText}, {"seq", kInt}, {"change", kInt}, {"event", kInt}}},
	{name: "room_events", nkey: 2, cols: []column{
		{"room_id", kText}, {"n", kInt}, {"kind", kText}, {"user_id", kText}, {"actor_id", kText}, {"role", kText},
		{"read_seq", kInt}, {"joined_at", kOptTime}, {"title", kText}, {"capacity", kInt}, {"member_count", kInt},
		{"retention_seconds", kInt}, {"last_seq", kInt}, {"last_change", kInt}, {"last_activity_at", kTime}, {"at", kTime}}},
	{name: "message_reactions", nkey: 4, cols: []column{
		{"room_id", kText}, {"seq", kInt}, {"emoji", kText}, {"user_id", kText}, {"created_at", kTime}}},
	// The files' rows (docs/files.md); their blobs are not in the
	// database: parley port copies them to the cluster's object store
	// after the rows (cmd/parley/portfiles.go).
	{name: "files", nkey: 1, cols: []column{
		{"id", kText}, {"room_id", kText}, {"uploader", kText}, {"name", kText}, {"type", kText}, {"size", kInt},
		{"sha256", kBlob}, {"preview", kBool}, {"created_at", kTime}, {"seq", kOptInt}, {"claim", kOptText}}},
	{name: "messages", nkey: 2, room: true, cols: []column{
		{"room_id", kText}, {"seq", kInt}, {"id", kText}, {"sender_id", kText}, {"sender_name", kText},
		{"body", kText}, {"client_id", kText}, {"sent_at", kTime}, {"edited_at", kOptTime}, {"deleted_at", kOptTime},
		{"change", kInt}, {"reactions", kText}, {"reply_seq", kInt}, {"reply_sender", kText}, {"reply_excerpt", kText},
		{"thread", kText}, {"pinned_by", kText}, {"pinned_at", kOptTime}, {"pin_change", kInt}, {"files", kOptText}, {"mentions", kOptText},
		{"change_seq", kInt}}},
}

// notCopied are the tables and columns of either schema the port leaves
// out, and why.
var notCopied = map[string]string{
	"schema_migrations": "each store's own: the target's migrations make it",
	"rooms.num":         "SQLite only: the key of a room's messages in the full-text index",
	"messages.tsv":      "PostgreSQL only: computed from the body as the port inserts each message",
	"search_position":   "SQLite only: how far the search indexer has come in each room; the port indexes what it copies",
}

// TableNames are the tables a port copies, in their order.
func TableNames() []string {
	names := make([]string, len(tables))
	for i, t := range tables {
		names[i] = t.name
	}
	return names
}

// colNames is the column list of t, quoted for either store ("until" is
// a keyword of neither, but "change" and "until" read better quoted).
func (t table) colNames() []string {
	names := make([]string, len(t.cols))
	for i, c := range t.cols {
		names[i] = `"` + c.name + `"`
	}
	return names
}

// selectSource is the SQLite query of one batch of t in key order: the
// rows after a key (the last row copied; with after false, from the
// start), up to a key (the range's last row; with until false, to the
// end), at most a number.
func (t table) selectSource(after, until bool) string {
	keys := joinCols(t.colNames()[:t.nkey])
	marks := strings.TrimSuffix(strings.Repeat("?, ", t.nkey), ", ")
	q := "SELECT " + joinCols(t.colNames()) + " FROM " + t.name + " WHERE true"
	if after {
		q += " AND (" + keys + ") > (" + marks + ")"
	}
	if until {
		q += " AND (" + keys + ") <= (" + marks + ")"
	}
	return q + " ORDER BY " + keys + " LIMIT ?"
}

func joinCols(cols []string) string { return strings.Join(cols, ", ") }

// selectAll is the query of every row of t in key order, in SQLite or (pg)
// PostgreSQL, where text keys compare bytewise (COLLATE "C") as SQLite's
// do.
func (t table) selectAll(pg bool) string {
	var order []string
	for _, c := range t.cols[:t.nkey] {
		o := `"` + c.name + `"`
		if pg && c.kind == kText {
			o += ` COLLATE "C"`
		}
		order = append(order, o)
	}
	return "SELECT " + strings.Join(t.colNames(), ", ") + " FROM " + t.name + " ORDER BY " + strings.Join(order, ", ")
}

// toTarget converts a value read from SQLite (int64, string, []byte or
// nil, as database/sql scans into any) into what pgx writes in c's
// PostgreSQL column.
func toTarget(c column, v any) (any, error) {
	switch c.kind {
	case kTime, kOptTime:
		if v == nil && c.kind == kOptTime {
			return nil, nil
		}
		n, ok := v.(int64)
		if !ok {
			return nil, fmt.Errorf("column %s: want unix microseconds, got %T", c.name, v)
		}
		return time.UnixMicro(n).UTC(), nil
	case kBool:
		n, ok := v.(int64)
		if !ok || (n != 0 && n != 1) {
			return nil, fmt.Errorf("column %s: want 0 or 1, got %v", c.name, v)
		}
		return n == 1, nil
	case kText, kOptText:
		switch s := v.(type) {
		case string:
			return s, nil
		case []byte:
			return string(s), nil
		case nil:
			if c.kind == kOptText {
				return nil, nil
			}
		}
		return nil, fmt.Errorf("column %s: want text, got %T", c.name, v)
	case kInt, kOptInt:
		if v == nil && c.kind == kOptInt {
			return nil, nil
		}
		if _, ok := v.(int64); !ok {
			return nil, fmt.Errorf("column %s: want an integer, got %T", c.name, v)
		}
		return v, nil
	case kBlob:
		switch b := v.(type) {
		case []byte:
			return b, nil
		case string:
			return []byte(b), nil
		}
		return nil, fmt.Errorf("column %s: want a blob, got %T", c.name, v)
	}
	return nil, fmt.Errorf("column %s: unknown kind %d", c.name, c.kind)
}
