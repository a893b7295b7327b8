package redact_test

import (
	"strings"
	"testing"

	"github.com/agentbreaker/agentbreaker/redact"
)

var (
	body1K = strings.Repeat("upstream said no; postgres://u:p@h/db ", 26)
	body1M = strings.Repeat("x", 1<<20)
	sink   any
)

func BenchmarkFingerprint1K(b *testing.B) {
	for b.Loop() {
		sink = redact.Of(body1K)
	}
}

func BenchmarkFingerprint1M(b *testing.B) {
	for b.Loop() {
		sink = redact.Of(body1M)
	}
}

func BenchmarkExcerpt1K(b *testing.B) {
	for b.Loop() {
		sink = redact.Excerpt(body1K, 256)
	}
}

func BenchmarkExcerpt1M(b *testing.B) {
	for b.Loop() {
		sink = redact.Excerpt(body1M, 256)
	}
}

func BenchmarkCheckNameValid(b *testing.B) {
	for b.Loop() {
		sink = redact.CheckName("f", "crm-eu.lookup_customer")
	}
}
