package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"parley"
)

// Outgoing webhooks (webhooks.go at the root): their registrations, the
// lease of their deliveries and their positions in each room. None of
// them touches a room's counters or makes a commit event, so they run on
// the pool, each one statement (or one transaction), beside the writers.
// Lease times are the database's clock (now()), so that the nodes' clocks
// need not agree.

const webhookCols = `id, name, url, secret, kinds, coalesce(room_id, ''), created_at, paused_at, paused_reason`

// CreateWebhook stores h (CreatedAt now when zero) and its position in
// every room that exists: the room's counters now, so that it receives
// what happens from here on. Fails with CodeNameTaken for a name or id in
// use and CodeNotFound for an unknown h.RoomID.
func (s *Store) CreateWebhook(ctx context.Context, h parley.Webhook) (parley.Webhook, error) {
	if h.CreatedAt.IsZero() {
		h.CreatedAt = parley.Now()
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if h.RoomID != "" {
			var one int
			if err := tx.QueryRow(ctx, `SELECT 1 FROM rooms WHERE id = $1`, h.RoomID).Scan(&one); errors.Is(err, pgx.ErrNoRows) {
				return parley.Errorf(parley.CodeNotFound, "room not found")
			} else if err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO webhooks (id, name, url, secret, kinds, room_id, created_at)
			VALUES ($1, $2, $3, $4, $5, nullif($6, ''), $7)`,
			h.ID, h.Name, h.URL, h.Secret, strings.Join(h.Kinds, " "), h.RoomID, h.CreatedAt); err != nil {
			var pe *pgconn.PgError
			if errors.As(err, &pe) && pe.Code == "23505" {
				return parley.Errorf(parley.CodeNameTaken, "webhook name %q is taken", h.Name)
			}
			return fmt.Errorf("create webhook: %w", err)
		}
		_, err := tx.Exec(ctx, `INSERT INTO webhook_cursors (webhook_id, room_id, seq, change, event)
			SELECT $1, id, last_seq, last_change, last_event FROM rooms WHERE $2 = '' OR id = $2`, h.ID, h.RoomID)
		return err
	})
	var pe *parley.Error
	if err != nil && !errors.As(err, &pe) {
		return h, s.readErr("create webhook", err)
	}
	return h, err
}

// Webhooks returns every webhook, by name.
func (s *Store) Webhooks(ctx context.Context) ([]parley.Webhook, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+webhookCols+` FROM webhooks ORDER BY name`)
	if err != nil {
		return nil, s.readErr("webhooks", err)
	}
	hooks, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (parley.Webhook, error) { return scanWebhook(r) })
	if err != nil {
		return nil, s.readErr("webhooks", err)
	}
	return hooks, nil
}

// ResumeWebhook delivers a paused webhook again, from its stored
// positions, and returns it. Fails with CodeNotFound for an unknown name.
func (s *Store) ResumeWebhook(ctx context.Context, name string) (parley.Webhook, error) {
	h, err := scanWebhook(s.pool.QueryRow(ctx, `UPDATE webhooks SET paused_at = NULL, paused_reason = ''
		WHERE name = $1 RETURNING `+webhookCols, name))
	if errors.Is(err, pgx.ErrNoRows) {
		return h, parley.Errorf(parley.CodeNotFound, "no webhook named %q", name)
	}
	if err != nil {
		return h, s.readErr("resume webhook", err)
	}
	return h, nil
}

// RemoveWebhook deletes the webhook named name and its positions. Fails
// with CodeNotFound for an unknown name.
func (s *Store) RemoveWebhook(ctx context.Context, name string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM webhooks WHERE name = $1`, name)
	if err != nil {
		return s.readErr("remove webhook", err)
	}
	if tag.RowsAffected() == 0 {
		return parley.Errorf(parley.CodeNotFound, "no webhook named %q", name)
	}
	return nil
}

// AcquireWebhookLease takes or renews owner's lease on the deliveries of
// webhook id until ttl from now (the database's clock). ok is false when
// another owner's lease has not expired, or the webhook is paused or
// gone. A takeover from another owner moves the token; a renewal keeps
// it. Two nodes asking at once queue on the webhook's row: one wins.
func (s *Store) AcquireWebhookLease(ctx context.Context, id, owner string, ttl time.Duration) (parley.HookLease, bool, error) {
	l := parley.HookLease{WebhookID: id, Owner: owner}
	err := s.pool.QueryRow(ctx, `UPDATE webhooks
		SET lease_token = CASE WHEN lease_owner = $2 THEN lease_token ELSE lease_token + 1 END,
			lease_owner = $2, lease_until = now() + $3 * interval '1 microsecond'
		WHERE id = $1 AND paused_at IS NULL AND (lease_owner = $2 OR lease_until <= now())
		RETURNING lease_token`, id, owner, ttl.Microseconds()).Scan(&l.Token)
	if errors.Is(err, pgx.ErrNoRows) {
		return l, false, nil
	}
	if err != nil {
		return l, false, s.readErr("webhook lease", err)
	}
	return l, true, nil
}

// ReleaseWebhookLease ends l now, so that another node may take the
// webhook over at once; a lease taken over already changes nothing.
func (s *Store) ReleaseWebhookLease(ctx context.Context, l parley.HookLease) error {
	_, err := s.pool.Exec(ctx, `UPDATE webhooks SET lease_until = '-infinity' WHERE id = $1 AND lease_owner = $2 AND lease_token = $3`,
		l.WebhookID, l.Owner, l.Token)
	if err != nil {
		return s.readErr("release webhook lease", err)
	}
	return nil
}

// PauseWebhook stops the deliveries of l's webhook (until ResumeWebhook)
// and ends the lease. Fails with CodeConflict when l is no longer the
// webhook's lease.
func (s *Store) PauseWebhook(ctx context.Context, l parley.HookLease, reason string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE webhooks SET paused_at = now(), paused_reason = $4, lease_until = '-infinity'
		WHERE id = $1 AND lease_owner = $2 AND lease_token = $3`, l.WebhookID, l.Owner, l.Token, reason)
	if err != nil {
		return s.readErr("pause webhook", err)
	}
	return leaseHeld(tag)
}

// AdvanceWebhook moves l's webhook's position in p.RoomID to p.Seq,
// p.Change and p.Event (a position only moves forward). Fails with CodeConflict when l
// is no longer the webhook's lease: the node that holds it now delivers.
// The webhook's row is locked (FOR SHARE) by the move, so a takeover
// waits for it, and a move that waits for a takeover sees the new token.
func (s *Store) AdvanceWebhook(ctx context.Context, l parley.HookLease, p parley.HookPosition) error {
	tag, err := s.pool.Exec(ctx, `INSERT INTO webhook_cursors (webhook_id, room_id, seq, change, event)
		SELECT id, $2, $3, $4, $7 FROM webhooks WHERE id = $1 AND lease_owner = $5 AND lease_token = $6 FOR SHARE
		ON CONFLICT (webhook_id, room_id) DO UPDATE
			SET seq = greatest(webhook_cursors.seq, excluded.seq), change = greatest(webhook_cursors.change, excluded.change),
				event = greatest(webhook_cursors.event, excluded.event)`,
		l.WebhookID, p.RoomID, p.Seq, p.Change, l.Owner, l.Token, p.Event)
	if err != nil {
		return s.readErr("advance webhook", err)
	}
	return leaseHeld(tag)
}

func leaseHeld(tag pgconn.CommandTag) error {
	if tag.RowsAffected() == 0 {
		return parley.Errorf(parley.CodeConflict, "the webhook's lease was taken over")
	}
	return nil
}

// HookPositions returns h's position in every room of its scope that has
// events past it (HookPosition.Behind), with the rooms' counters. A room
// with no stored position (made after the webhook) is at 0.
func (s *Store) HookPositions(ctx context.Context, h parley.Webhook) ([]parley.HookPosition, error) {
	rows, err := s.pool.Query(ctx, `SELECT r.id, coalesce(c.seq, 0), coalesce(c.change, 0), coalesce(c.event, 0), r.last_seq, r.last_change, r.last_event
		FROM rooms r LEFT JOIN webhook_cursors c ON c.webhook_id = $1 AND c.room_id = r.id
		WHERE ($2 = '' OR r.id = $2) AND (r.last_seq > coalesce(c.seq, 0) OR r.last_change > coalesce(c.change, 0)
			OR r.last_event > coalesce(c.event, 0))`, h.ID, h.RoomID)
	if err != nil {
		return nil, s.readErr("hook positions", err)
	}
	ps, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (parley.HookPosition, error) {
		var p parley.HookPosition
		err := r.Scan(&p.RoomID, &p.Seq, &p.Change, &p.Event, &p.LastSeq, &p.LastChange, &p.LastEvent)
		return p, err
	})
	if err != nil {
		return nil, s.readErr("hook positions", err)
	}
	return ps, nil
}

func scanWebhook(row pgx.Row) (parley.Webhook, error) {
	var h parley.Webhook
	var kinds string
	if err := row.Scan(&h.ID, &h.Name, &h.URL, &h.Secret, &kinds, &h.RoomID, &h.CreatedAt, &h.PausedAt, &h.PausedReason); err != nil {
		return h, err
	}
	h.Kinds = strings.Fields(kinds)
	h.CreatedAt = h.CreatedAt.UTC()
	if h.PausedAt != nil {
		at := h.PausedAt.UTC()
		h.PausedAt = &at
	}
	return h, nil
}
