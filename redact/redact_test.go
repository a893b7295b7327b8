package redact_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/redact"
)

func TestMaskSecretShapes(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		secret string // must be gone
		keep   string // must stay
	}{
		{"dsn password", "dial failed: postgres://app:hunter2pass@db.internal:5432/x", "hunter2pass", "postgres://app:"},
		{"url password", "GET https://bob:s3cr3t!x@api.example.com/v1", "s3cr3t!x", "api.example.com"},
		{"bearer", "Authorization: Bearer abcDEF123.xyz-_~+/456", "abcDEF123", "Authorization"},
		{"aws key", "key AKIAIOSFODNN7EXAMPLE denied", "AKIAIOSFODNN7EXAMPLE", "denied"},
		{"google key", "key=AIzaSyA1234567890abcdefghijklmnopqrstuv", "AIzaSyA1234567890abcdefghijklmnopqrstuv", ""},
		{"github token", "token ghp_0123456789abcdefghijklmnopqrstuvwxyz", "ghp_0123456789abcdefghijklmnopqrstuvwxyz", ""},
		{"jwt", "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.sflKxwRJSMeKKF2QT4fwpMeJf36", "sflKxwRJSMeKKF2QT4fwpMeJf36", "jwt"},
		{"private key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7secretbody\n-----END RSA PRIVATE KEY----- tail", "MIIEowIBAAKCAQEA7secretbody", "tail"},
		{"cut private key", "x -----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAAS", "MIIEvQIBADANBgkq", "x"},
		{"password field", `{"password": "correct-horse", "user": "a"}`, "correct-horse", `"user"`},
		{"api_key param", "url?api_key=zzTopSecretValue&x=1", "zzTopSecretValue", "x=1"},
		{"long hex", "session 0123456789abcdef0123456789abcdef01 expired", "0123456789abcdef0123456789abcdef01", "expired"},
		{"long base64", "blob dGhpcyBpcyBhIHZlcnkgc2VjcmV0IHZhbHVlIGluZGVlZA== end", "dGhpcyBpcyBhIHZlcnkgc2VjcmV0IHZhbHVl", "end"},
		{"card", "card 4111 1111 1111 1111 declined", "4111 1111 1111 1111", "declined"},
		{"email", "user alice.smith@example.org not allowed", "alice.smith", "example.org"},
		{"slack", "xoxb-1234567890-abcdefghij", "xoxb-1234567890-abcdefghij", ""},
		{"stripe", "sk_live_abcdefghijklmnop1234", "sk_live_abcdefghijklmnop1234", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := redact.Mask(tt.in)
			if strings.Contains(got, tt.secret) {
				t.Errorf("Mask(%q) = %q: still holds %q", tt.in, got, tt.secret)
			}
			if !strings.Contains(got, redact.Masked) {
				t.Errorf("Mask(%q) = %q: nothing masked", tt.in, got)
			}
			if tt.keep != "" && !strings.Contains(got, tt.keep) {
				t.Errorf("Mask(%q) = %q: lost %q", tt.in, got, tt.keep)
			}
		})
	}
}

func TestMaskLeavesOrdinaryText(t *testing.T) {
	for _, s := range []string{
		"service unavailable, try later",
		"order 12345 not found",
		"card 4111 1111 1111 1112 declined", // fails Luhn: an order number, not a card
		"https://api.example.com/v1/items?page=2",
	} {
		if got := redact.Mask(s); got != s {
			t.Errorf("Mask(%q) = %q, want it unchanged", s, got)
		}
	}
}

func TestClean(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"plain", "hello world", 0, "hello world"},
		{"controls", "a\x00b\x1b[31mc\x7fd\u0085e", 0, "a b [31mc d e"},
		{"newlines collapse", "line1\r\n\n\tline2  ", 0, "line1 line2"},
		{"invalid utf8 dropped", "ok\xff\xfe done", 0, "ok done"},
		{"bidi and zero width", "a\u202eb\u200bc\ufeffd", 0, "a b c d"},
		{"cut marks", "abcdefghij", 8, "abcde…"},
		{"cut on rune boundary", "ééééé", 8, "éé…"},
		{"fits exactly", "abcdefgh", 8, "abcdefgh"},
		{"tiny bound", "abcdefgh", 3, "abc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := redact.Clean(tt.in, tt.max); got != tt.want {
				t.Errorf("Clean(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
			}
		})
	}
}

func TestExcerptBoundedOnHugeBody(t *testing.T) {
	body := strings.Repeat("x", 1<<20) // 1 MB
	got := redact.Excerpt("pre "+body, 64)
	if len(got) > 64 {
		t.Fatalf("Excerpt of 1 MB is %d bytes, want <= 64", len(got))
	}
	// A secret that straddles the bound is masked, not cut in half and left.
	s := strings.Repeat("a ", 28) + "AKIAIOSFODNN7EXAMPLE"
	if got := redact.Excerpt(s, 64); strings.Contains(got, "AKIAIOSF") {
		t.Errorf("Excerpt = %q: holds the head of a key that straddled the bound", got)
	}
}

func TestFingerprint(t *testing.T) {
	a := redact.Of("upstream said no")
	if a.Len != 16 || len(a.Hash) != 12 {
		t.Fatalf("Of = %+v, want len 16 and a 12-digit hash", a)
	}
	if b := redact.Of("upstream said no"); b != a {
		t.Errorf("same text, different fingerprints: %v, %v", a, b)
	}
	if c := redact.Of("upstream said yes"); c.Hash == a.Hash {
		t.Errorf("different texts share a hash: %v", c)
	}
	if got := redact.Of("").String(); got != "len=0" {
		t.Errorf("empty fingerprint = %q", got)
	}
	keyed := redact.MustNew(redact.Config{Key: []byte("0123456789abcdef")})
	if k := keyed.Fingerprint("upstream said no"); k.Hash == a.Hash || k.Len != a.Len {
		t.Errorf("keyed fingerprint %v: want another hash, same length as %v", k, a)
	}
}

func TestAttrDefaultHasNoText(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	log.Info("x", redact.Attr("upstream_error", "password=hunter2 <script>"), redact.ErrorAttr("error", errors.New("boom-token-x")))
	out := buf.String()
	for _, tok := range []string{"hunter2", "script", "boom-token-x"} {
		if strings.Contains(out, tok) {
			t.Errorf("log %s holds %q", out, tok)
		}
	}
	if !strings.Contains(out, `"upstream_error":{"len":25,"hash":"`) {
		t.Errorf("log %s: no fingerprint group", out)
	}
}

func TestAttrExcerptOptIn(t *testing.T) {
	r := redact.MustNew(redact.Config{Excerpt: true, ExcerptLen: 64})
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", r.Attr("upstream_error", "db down: postgres://u:hunter2@h/db\x1b[2J"))
	out := buf.String()
	if strings.Contains(out, "hunter2") || strings.Contains(out, `\u001b`) {
		t.Errorf("excerpt %s holds the password or an escape", out)
	}
	if !strings.Contains(out, `"excerpt":"db down: postgres://u:[REDACTED]@h/db [2J"`) {
		t.Errorf("excerpt %s: want the masked text", out)
	}
	if s := r.Summary("db down"); s != `len=7 hash=`+r.Fingerprint("db down").Hash+` excerpt="db down"` {
		t.Errorf("Summary = %q", s)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	for _, tt := range []struct {
		name  string
		cfg   redact.Config
		field string
	}{
		{"short key", redact.Config{Key: []byte("short")}, "Config.Key"},
		{"excerpt too long", redact.Config{ExcerptLen: redact.MaxExcerptLen + 1}, "Config.ExcerptLen"},
		{"excerpt too short", redact.Config{ExcerptLen: 3}, "Config.ExcerptLen"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := redact.New(tt.cfg)
			var ce *agentbreaker.ConfigError
			if !errors.As(err, &ce) || ce.Field != tt.field {
				t.Fatalf("New = %v, want a ConfigError for %s", err, tt.field)
			}
		})
	}
}

func TestCheckName(t *testing.T) {
	tests := []struct {
		name, value string
		wantErr     string
	}{
		{"ok", "crm-eu.lookup_customer", ""},
		{"unicode ok", "météo", ""},
		{"empty", "", "must not be empty"},
		{"invalid utf8", "crm\xff", "not valid UTF-8"},
		{"newline", "crm\nX", "control or format character '\\n'"},
		{"escape", "crm\x1b[31m", "control or format character"},
		{"bidi", "crm\u202e", "control or format character"},
		{"spaces", " crm", "start or end with a space"},
		{"too long", strings.Repeat("a", redact.MaxNameLen+1), "bytes long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := redact.CheckName("Dependencies.key", tt.value)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("CheckName(%q) = %v, want nil", tt.value, err)
				}
				return
			}
			var ce *agentbreaker.ConfigError
			if !errors.As(err, &ce) || !strings.Contains(ce.Problem, tt.wantErr) || ce.Field != "Dependencies.key" {
				t.Fatalf("CheckName(%q) = %v, want a ConfigError for the field saying %q", tt.value, err, tt.wantErr)
			}
			if len(err.Error()) > 300 || !utf8.ValidString(err.Error()) {
				t.Errorf("error message is unbounded or invalid UTF-8: %q", err.Error())
			}
			if rep := redact.RepairName(tt.value); redact.CheckName("x", rep) != nil {
				t.Errorf("RepairName(%q) = %q, which CheckName refuses", tt.value, rep)
			}
		})
	}
}

func FuzzExcerpt(f *testing.F) {
	for _, s := range []string{"", "a\x00b", "postgres://u:p@h", "\xff\xfe", "-----BEGIN PRIVATE KEY-----", "é" + strings.Repeat("x", 300)} {
		f.Add(s, 32)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		max = (max%512+512)%512 + 1 // 1..512
		for _, out := range []string{redact.Excerpt(s, max), redact.Clean(s, max)} {
			if len(out) > max {
				t.Fatalf("len %d > max %d: %q", len(out), max, out)
			}
			if !utf8.ValidString(out) {
				t.Fatalf("invalid UTF-8: %q", out)
			}
			for _, r := range out {
				if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u202e' {
					t.Fatalf("control character %q in %q", r, out)
				}
			}
		}
	})
}

func FuzzName(f *testing.F) {
	for _, s := range []string{"crm", "", "\xff", "a\nb", strings.Repeat("z", 200)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if err := redact.CheckName("f", s); err == nil && (!utf8.ValidString(s) || len(s) > redact.MaxNameLen) {
			t.Fatalf("CheckName accepted %q", s)
		}
		if rep := redact.RepairName(s); redact.CheckName("f", rep) != nil {
			t.Fatalf("RepairName(%q) = %q is refused", s, rep)
		}
		_ = redact.Of(s).String()
	})
}

func TestWrapKeepsIdentityNotText(t *testing.T) {
	sentinel := errors.New("sentinel")
	err := redact.Wrap(fmt.Errorf("body %q: %w", "hunter2 <script>", sentinel))
	if strings.Contains(err.Error(), "hunter2") || !strings.HasPrefix(err.Error(), "error text withheld: len=") {
		t.Errorf("Wrap(...).Error() = %q", err.Error())
	}
	if !errors.Is(err, sentinel) {
		t.Error("errors.Is lost the wrapped error")
	}
	if redact.Wrap(err) != err || redact.Wrap(nil) != nil {
		t.Error("Wrap is not idempotent or wraps nil")
	}
}
