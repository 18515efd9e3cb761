package webhook_test

import (
	"context"
	"testing"
	"time"

	"parley"
	"parley/webhook"
)

// Probe: a delivery's body is made once, when the event is read, and the
// same bytes are retried with backoff until the receiver takes them:
// with the defaults (35 attempts, backoff up to 5 minutes) for hours. A
// message deleted meanwhile (by its sender, a moderator, retention, or
// its account's deletion) is still delivered later with its text,
// although a delivery's data is "the message as it is now" and every
// replay of a deleted message carries no body (design §3b "Replays say
// what they carry"; §5 "Deleted means deleted"). A retry should carry the
// message as it is at that attempt.
func TestProbeRetryDeliversDeletedText(t *testing.T) {
	forEachStore(t, func(t *testing.T, st hookStore) {
		ctx := context.Background()
		u, rooms := fill(t, st)
		const initialFailures = 1 << 30
		rcv, srv := newReceiver(t, "whsec_probe_secret_1", initialFailures)
		if _, err := st.CreateWebhook(ctx, parley.Webhook{ID: parley.NewID(), Name: "stale", URL: srv.URL, Secret: "whsec_probe_secret_1",
			Kinds: []string{parley.HookMessageSent}, RoomID: rooms[0].ID}); err != nil {
			t.Fatal(err)
		}
		m := startManager(t, st, "n1", 1<<20)
		defer m.Close()
		sent, _, err := st.Send(ctx, parley.NewMessage{RoomID: rooms[0].ID, SenderID: u.ID, SenderName: u.Name, Body: "the launch code is 0000"})
		if err != nil {
			t.Fatal(err)
		}
		// Wait for a failed attempt: the delivery is in its retry loop.
		deadline := time.Now().Add(30 * time.Second)
		for {
			rcv.mu.Lock()
			tried := rcv.fail < initialFailures
			rcv.mu.Unlock()
			if tried {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("no delivery attempt")
			}
			time.Sleep(5 * time.Millisecond)
		}
		if _, _, err := st.DeleteMessage(ctx, parley.Deletion{RoomID: rooms[0].ID, Seq: sent.Seq, ActorID: u.ID}); err != nil {
			t.Fatal(err)
		}
		// An attempt may have read the message before the DELETE
		// committed and still be on its way (a delivery in flight, which
		// carries the message as it was when it was read). The receiver
		// refuses one more attempt, which arrives after the DELETE's
		// commit, and takes the next: that one was read after the
		// refusal, so after the DELETE.
		rcv.setFail(1)
		got := rcv.await(t, map[string]bool{webhook.SendID(rooms[0].ID, sent.Seq): true})
		for _, d := range got {
			if d.msg.Body != "" {
				t.Errorf("delivery %s after the message's deletion carries its text %q", d.ID, d.msg.Body)
			}
		}
	})
}
