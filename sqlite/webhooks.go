package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"parley"
)

// Outgoing webhooks (webhooks.go at the root): their registrations, the
// lease of their deliveries and their positions in each room. They are
// written rarely next to the messages (one position move per delivered
// event), so their statements are not prepared: each runs through the
// writer (a write) or the reader pool (a read).

const webhookCols = `id, name, url, secret, kinds, coalesce(room_id, ''), created_at, paused_at, paused_reason`

// CreateWebhook stores h (CreatedAt now when zero) and its position in
// every room that exists: the room's counters now, so that it receives
// what happens from here on. Fails with CodeNameTaken for a name or id in
// use and CodeNotFound for an unknown h.RoomID.
func (s *Store) CreateWebhook(ctx context.Context, h parley.Webhook) (parley.Webhook, error) {
	_, err := s.write(ctx, func(w *wtx) (result, error) {
		if h.RoomID != "" {
			if _, err := w.room(h.RoomID); err != nil {
				return result{}, err
			}
		}
		if h.CreatedAt.IsZero() {
			h.CreatedAt = fromMicro(w.now())
		}
		_, err := w.tx.Exec(`INSERT INTO webhooks (id, name, url, secret, kinds, room_id, created_at)
			VALUES (?, ?, ?, ?, ?, nullif(?, ''), ?)`,
			h.ID, h.Name, h.URL, h.Secret, strings.Join(h.Kinds, " "), h.RoomID, h.CreatedAt.UnixMicro())
		if isConstraint(err) {
			return result{}, parley.Errorf(parley.CodeNameTaken, "webhook name %q is taken", h.Name)
		}
		if err != nil {
			return result{}, fmt.Errorf("create webhook: %w", err)
		}
		if _, err := w.tx.Exec(`INSERT INTO webhook_cursors (webhook_id, room_id, seq, change, event)
			SELECT ?1, id, last_seq, last_change, last_event FROM rooms WHERE ?2 = '' OR id = ?2`, h.ID, h.RoomID); err != nil {
			return result{}, fmt.Errorf("create webhook positions: %w", err)
		}
		return result{}, nil
	})
	return h, err
}

// Webhooks returns every webhook, by name.
func (s *Store) Webhooks(ctx context.Context) ([]parley.Webhook, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT `+webhookCols+` FROM webhooks ORDER BY name`)
	if err != nil {
		return nil, s.readErr("webhooks", err)
	}
	defer rows.Close()
	var hooks []parley.Webhook
	for rows.Next() {
		h, err := scanWebhook(rows)
		if err != nil {
			return nil, s.readErr("webhooks", err)
		}
		hooks = append(hooks, h)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr("webhooks", err)
	}
	return hooks, nil
}

// ResumeWebhook delivers a paused webhook again, from its stored
// positions, and returns it. Fails with CodeNotFound for an unknown name.
func (s *Store) ResumeWebhook(ctx context.Context, name string) (parley.Webhook, error) {
	var h parley.Webhook
	_, err := s.write(ctx, func(w *wtx) (result, error) {
		var err error
		h, err = scanWebhook(w.tx.QueryRow(`UPDATE webhooks SET paused_at = NULL, paused_reason = ''
			WHERE name = ? RETURNING `+webhookCols, name))
		if errors.Is(err, sql.ErrNoRows) {
			return result{}, parley.Errorf(parley.CodeNotFound, "no webhook named %q", name)
		}
		return result{}, err
	})
	return h, err
}

// RemoveWebhook deletes the webhook named name and its positions. Fails
// with CodeNotFound for an unknown name.
func (s *Store) RemoveWebhook(ctx context.Context, name string) error {
	_, err := s.write(ctx, func(w *wtx) (result, error) {
		res, err := w.tx.Exec(`DELETE FROM webhooks WHERE name = ?`, name)
		if err != nil {
			return result{}, fmt.Errorf("remove webhook: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return result{}, parley.Errorf(parley.CodeNotFound, "no webhook named %q", name)
		}
		return result{}, nil
	})
	return err
}

// AcquireWebhookLease takes or renews owner's lease on the deliveries of
// webhook id until ttl from now. ok is false when another owner's lease
// has not expired, or the webhook is paused or gone. A takeover from
// another owner moves the token; a renewal keeps it.
func (s *Store) AcquireWebhookLease(ctx context.Context, id, owner string, ttl time.Duration) (parley.HookLease, bool, error) {
	l := parley.HookLease{WebhookID: id, Owner: owner}
	ok := false
	_, err := s.write(ctx, func(w *wtx) (result, error) {
		now := w.now()
		err := w.tx.QueryRow(`UPDATE webhooks
			SET lease_token = CASE WHEN lease_owner = ?2 THEN lease_token ELSE lease_token + 1 END,
				lease_owner = ?2, lease_until = ?4
			WHERE id = ?1 AND paused_at IS NULL AND (lease_owner = ?2 OR lease_until <= ?3)
			RETURNING lease_token`, id, owner, now, now+ttl.Microseconds()).Scan(&l.Token)
		if errors.Is(err, sql.ErrNoRows) {
			return result{}, nil
		}
		ok = err == nil
		return result{}, err
	})
	return l, ok, err
}

// ReleaseWebhookLease ends l now, so that another node may take the
// webhook over at once; a lease taken over already changes nothing.
func (s *Store) ReleaseWebhookLease(ctx context.Context, l parley.HookLease) error {
	_, err := s.write(ctx, func(w *wtx) (result, error) {
		_, err := w.tx.Exec(`UPDATE webhooks SET lease_until = 0 WHERE id = ? AND lease_owner = ? AND lease_token = ?`,
			l.WebhookID, l.Owner, l.Token)
		return result{}, err
	})
	return err
}

// PauseWebhook stops the deliveries of l's webhook (until ResumeWebhook)
// and ends the lease. Fails with CodeConflict when l is no longer the
// webhook's lease.
func (s *Store) PauseWebhook(ctx context.Context, l parley.HookLease, reason string) error {
	_, err := s.write(ctx, func(w *wtx) (result, error) {
		res, err := w.tx.Exec(`UPDATE webhooks SET paused_at = ?, paused_reason = ?, lease_until = 0
			WHERE id = ? AND lease_owner = ? AND lease_token = ?`, w.now(), reason, l.WebhookID, l.Owner, l.Token)
		if err != nil {
			return result{}, fmt.Errorf("pause webhook: %w", err)
		}
		return result{}, leaseHeld(res)
	})
	return err
}

// AdvanceWebhook moves l's webhook's position in p.RoomID to p.Seq,
// p.Change and p.Event (a position only moves forward). Fails with CodeConflict when l
// is no longer the webhook's lease: the node that holds it now delivers.
func (s *Store) AdvanceWebhook(ctx context.Context, l parley.HookLease, p parley.HookPosition) error {
	_, err := s.write(ctx, func(w *wtx) (result, error) {
		res, err := w.tx.Exec(`INSERT INTO webhook_cursors (webhook_id, room_id, seq, change, event)
			SELECT id, ?2, ?3, ?4, ?7 FROM webhooks WHERE id = ?1 AND lease_owner = ?5 AND lease_token = ?6
			ON CONFLICT (webhook_id, room_id) DO UPDATE SET seq = max(seq, excluded.seq), change = max(change, excluded.change),
				event = max(event, excluded.event)`,
			l.WebhookID, p.RoomID, p.Seq, p.Change, l.Owner, l.Token, p.Event)
		if err != nil {
			return result{}, fmt.Errorf("advance webhook: %w", err)
		}
		return result{}, leaseHeld(res)
	})
	return err
}

func leaseHeld(res sql.Result) error {
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return parley.Errorf(parley.CodeConflict, "the webhook's lease was taken over")
	}
	return nil
}

// HookPositions returns h's position in every room of its scope that has
// events past it (HookPosition.Behind), with the rooms' counters. A room
// with no stored position (made after the webhook) is at 0.
func (s *Store) HookPositions(ctx context.Context, h parley.Webhook) ([]parley.HookPosition, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT r.id, coalesce(c.seq, 0), coalesce(c.change, 0), coalesce(c.event, 0), r.last_seq, r.last_change, r.last_event
		FROM rooms r LEFT JOIN webhook_cursors c ON c.webhook_id = ?1 AND c.room_id = r.id
		WHERE (?2 = '' OR r.id = ?2) AND (r.last_seq > coalesce(c.seq, 0) OR r.last_change > coalesce(c.change, 0)
			OR r.last_event > coalesce(c.event, 0))`, h.ID, h.RoomID)
	if err != nil {
		return nil, s.readErr("hook_positions", err)
	}
	defer rows.Close()
	var ps []parley.HookPosition
	for rows.Next() {
		var p parley.HookPosition
		if err := rows.Scan(&p.RoomID, &p.Seq, &p.Change, &p.Event, &p.LastSeq, &p.LastChange, &p.LastEvent); err != nil {
			return nil, s.readErr("hook_positions", err)
		}
		ps = append(ps, p)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr("hook_positions", err)
	}
	return ps, nil
}

func scanWebhook(row scanner) (parley.Webhook, error) {
	var h parley.Webhook
	var kinds string
	var created int64
	var paused sql.NullInt64
	if err := row.Scan(&h.ID, &h.Name, &h.URL, &h.Secret, &kinds, &h.RoomID, &created, &paused, &h.PausedReason); err != nil {
		return h, err
	}
	h.Kinds = strings.Fields(kinds)
	h.CreatedAt = fromMicro(created)
	if paused.Valid {
		at := fromMicro(paused.Int64)
		h.PausedAt = &at
	}
	return h, nil
}
