package chat_test

import (
	"sync"
	"time"
)

// fakeClock is a chat.Config.Now that moves only when the test says so.
type fakeClock struct {
	mu sync.Mutex // guards t
	t  time.Time
}

// newFakeClock returns a clock standing at a fixed instant.
func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

// Now returns the clock's time.
func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
