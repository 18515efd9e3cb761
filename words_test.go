package parley_test

import (
	"slices"
	"strings"
	"testing"
	"unicode"

	"parley"
)

// refWords is the definition Words implements: the runs of letters and
// numbers, each lower-cased by strings.ToLower.
func refWords(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) }) {
		out = append(out, strings.ToLower(w))
	}
	return out
}

func collectWords(s string) (words, each []string) {
	parley.Words(s, func(w string) { words = append(words, w) })
	buf := make([]byte, 0, 4)
	buf = parley.EachWord(s, buf, func(w []byte) { each = append(each, string(w)) })
	return words, each
}

func TestWords(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"Hello, WORLD! hello", []string{"hello", "world", "hello"}},
		{"  a1b2 -- 3c ", []string{"a1b2", "3c"}},
		{"안녕하세요 세계", []string{"안녕하세요", "세계"}},
		{"ÉCOLE Straße ΣΊΣΥΦΟΣ", []string{"école", "straße", "σίσυφοσ"}},
		{"x\xffy", []string{"x", "y"}},           // invalid UTF-8 separates
		{"x\uFFFDy", []string{"x", "y"}},         // as does the replacement rune
		{"٣٤ and Ⅻ", []string{"٣٤", "and", "ⅻ"}}, // other numbers
	} {
		words, each := collectWords(tc.in)
		if !slices.Equal(words, tc.want) || !slices.Equal(each, tc.want) {
			t.Errorf("Words(%q) = %q, EachWord %q; want %q", tc.in, words, each, tc.want)
		}
		if ref := refWords(tc.in); !slices.Equal(ref, tc.want) {
			t.Errorf("reference(%q) = %q; the test's want %q is wrong", tc.in, ref, tc.want)
		}
	}
}

// FuzzWords checks Words and EachWord against the definition.
func FuzzWords(f *testing.F) {
	for _, s := range []string{"Hello, WORLD!", "안녕 세계", "ÉCOLE\xff", "İstanbul ǅ", "a\u0301b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := refWords(s)
		words, each := collectWords(s)
		if !slices.Equal(words, want) || !slices.Equal(each, want) {
			t.Fatalf("Words(%q) = %q, EachWord %q; want %q", s, words, each, want)
		}
	})
}

func TestEachWordAllocs(t *testing.T) {
	buf := make([]byte, 0, 64)
	n := 0
	allocs := testing.AllocsPerRun(100, func() {
		buf = parley.EachWord("The quick BROWN fox, 안녕하세요 123", buf, func(w []byte) { n += len(w) })
	})
	if allocs != 0 {
		t.Errorf("EachWord allocated %v times a call; want 0", allocs)
	}
}
