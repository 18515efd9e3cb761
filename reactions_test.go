package parley

import (
	"strings"
	"testing"
)

func TestCheckEmoji(t *testing.T) {
	for _, tc := range []struct {
		name  string
		emoji string
		ok    bool
	}{
		{"thumbs up", "👍", true},
		{"heart with variation selector", "❤️", true},
		{"family, ZWJ sequence", "👨‍👩‍👧", true},
		{"flag", "🇫🇷", true},
		{"keycap", "1️⃣", true},
		{"skin tone", "👍🏽", true},
		{"short name", ":thumbsup:", true},
		{"short name with plus", ":+1:", true},
		{"empty", "", false},
		{"a letter", "a", false},
		{"a word", "lol", false},
		{"upper-case short name", ":Party:", false},
		{"empty short name", "::", false},
		{"markup", ":<b>:", false},
		{"trailing space", "👍 ", false},
		{"control character", "👍\x00", false},
		{"a digit alone", "1", false},
		{"digit beside a pictograph", "👍1", false},
		{"over 32 bytes", strings.Repeat("👍", 9), false},
		{"invalid UTF-8", "\xff", false},
	} {
		err := CheckEmoji(tc.emoji)
		if (err == nil) != tc.ok {
			t.Errorf("%s: CheckEmoji(%q) = %v, want ok %v", tc.name, tc.emoji, err, tc.ok)
		}
	}
}

func TestExcerpt(t *testing.T) {
	long := strings.Repeat("é🙂", 60) // 120 characters
	if got := Excerpt(long); got != strings.Repeat("é🙂", 50) {
		t.Errorf("Excerpt(120 characters) = %d characters, want the first %d", len([]rune(got)), MaxExcerpt)
	}
	if got := Excerpt("short"); got != "short" {
		t.Errorf("Excerpt(short) = %q", got)
	}
}
