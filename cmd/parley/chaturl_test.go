package main

import "testing"

// TestChatURL: serve logs where the chat page is; a listener on every
// address is reached at 127.0.0.1.
func TestChatURL(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:8080": "http://127.0.0.1:8080/",
		"[::]:8080":      "http://127.0.0.1:8080/",
		"0.0.0.0:80":     "http://127.0.0.1:80/",
		":9000":          "http://127.0.0.1:9000/",
		"[::1]:8080":     "http://[::1]:8080/",
		"chat.local:443": "http://chat.local:443/",
	} {
		if got := chatURL(addr); got != want {
			t.Errorf("chatURL(%q) = %q, want %q", addr, got, want)
		}
	}
}
