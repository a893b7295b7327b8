package unsafetext_test

import (
	"testing"

	"github.com/agentbreaker/agentbreaker/internal/unsafetext"
)

func TestRune(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		r    rune
		want bool
	}{
		{"letter", 'a', false},
		{"space", ' ', false},
		{"accented", 'é', false},
		{"replacement character", '\uFFFD', false},
		{"NUL", 0, true},
		{"tab", '\t', true},
		{"DEL", 0x7f, true},
		{"C1", 0x85, true},
		{"right-to-left override", '\u202E', true},
		{"left-to-right isolate", '\u2066', true},
		{"zero-width joiner", '\u200D', true},
		{"BOM", '\uFEFF', true},
		{"line separator", '\u2028', true},
		{"private use", '\uE000', true},
		{"non-character", '\uFDD0', true},
		{"non-character at a plane's end", 0x1FFFF, true},
	}
	for _, tt := range tests {
		if got := unsafetext.Rune(tt.r); got != tt.want {
			t.Errorf("%s (%U): Rune = %v, want %v", tt.name, tt.r, got, tt.want)
		}
	}
}
