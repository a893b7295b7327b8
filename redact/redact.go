package redact

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"log/slog"
	"strconv"

	"github.com/agentbreaker/agentbreaker"
)

// ConfigError is the module's configuration error.
type ConfigError = agentbreaker.ConfigError

// Limits of excerpts.
const (
	// defaultExcerptLen is the default bound of an excerpt, in bytes.
	defaultExcerptLen = 256
	// MaxExcerptLen is the largest excerpt Config.ExcerptLen may ask for.
	MaxExcerptLen = 4096
	// hashHex is how many hex digits of the hash a fingerprint keeps (48 bits):
	// enough to tell errors apart in one incident, too few to be an identifier.
	hashHex = 12
	// maxHashed bounds the text hashed, so a huge body costs no more than this: two
	// texts that differ only past it (and not in length) share a fingerprint.
	maxHashed = 64 << 10
)

// Config configures a [Redactor]. The zero value is the default: fingerprints only,
// unkeyed hash.
type Config struct {
	// Key, when set, keys the fingerprint's hash (HMAC-SHA-256), so that nobody without
	// the key can confirm a guess of the text from its fingerprint. At least 16 bytes.
	// Defaults to nil: unkeyed SHA-256 (see the package doc).
	Key []byte
	// Excerpt adds a bounded, cleaned and masked excerpt of the text to what operators
	// see. Masking is best effort: it knows common secret shapes, not yours. Defaults
	// to false: fingerprints only.
	Excerpt bool
	// ExcerptLen bounds an excerpt in bytes, from 16 to MaxExcerptLen. Defaults to
	// 256.
	ExcerptLen int
}

// Redactor turns upstream text into what an operator may see. It is safe for
// concurrent use; the zero value is not usable, use [New] or [Default].
type Redactor struct {
	key        []byte
	excerpt    bool
	excerptLen int
}

// Default is the default redactor: fingerprints only, unkeyed hash.
var Default = MustNew(Config{})

// New checks cfg and returns a Redactor, or a *ConfigError naming the field.
func New(cfg Config) (*Redactor, error) {
	if cfg.Key != nil && len(cfg.Key) < 16 {
		return nil, &ConfigError{Package: "redact", Field: "Config.Key", Value: strconv.Itoa(len(cfg.Key)) + " bytes", Problem: "must be at least 16 bytes, or nil for an unkeyed hash"}
	}
	if cfg.ExcerptLen == 0 {
		cfg.ExcerptLen = defaultExcerptLen
	}
	if cfg.ExcerptLen < 16 || cfg.ExcerptLen > MaxExcerptLen {
		return nil, &ConfigError{Package: "redact", Field: "Config.ExcerptLen", Value: cfg.ExcerptLen, Problem: "must be between 16 and " + strconv.Itoa(MaxExcerptLen)}
	}
	return &Redactor{key: append([]byte(nil), cfg.Key...), excerpt: cfg.Excerpt, excerptLen: cfg.ExcerptLen}, nil
}

// MustNew is New that panics on error.
func MustNew(cfg Config) *Redactor {
	r, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return r
}

// Fingerprint is a bounded summary of upstream text: its length in bytes and a short
// hash of its first 64 KiB. It never contains any of the text.
type Fingerprint struct {
	Len  int
	Hash string // hashHex lower-case hex digits; "" for empty text
}

// String returns "len=N hash=XXXXXXXXXXXX", or "len=0" for empty text.
func (f Fingerprint) String() string {
	if f.Len == 0 {
		return "len=0"
	}
	return "len=" + strconv.Itoa(f.Len) + " hash=" + f.Hash
}

// LogValue makes a Fingerprint a group of len and hash in slog records.
func (f Fingerprint) LogValue() slog.Value {
	return slog.GroupValue(slog.Int("len", f.Len), slog.String("hash", f.Hash))
}

// Fingerprint returns the fingerprint of s.
func (r *Redactor) Fingerprint(s string) Fingerprint {
	if s == "" {
		return Fingerprint{}
	}
	var h hash.Hash
	if r.key != nil {
		h = hmac.New(sha256.New, r.key)
	} else {
		h = sha256.New()
	}
	h.Write([]byte(s[:min(len(s), maxHashed)]))
	var sum [sha256.Size]byte
	return Fingerprint{Len: len(s), Hash: hex.EncodeToString(h.Sum(sum[:0]))[:hashHex]}
}

// Excerpts reports whether the redactor adds excerpts.
func (r *Redactor) Excerpts() bool { return r.excerpt }

// Excerpt returns the opt-in excerpt of s ([Excerpt] with the configured bound), or
// "" when excerpts are off.
func (r *Redactor) Excerpt(s string) string {
	if !r.excerpt {
		return ""
	}
	return Excerpt(s, r.excerptLen)
}

// Attr is the slog attribute for upstream text under key: a group holding len and
// hash, and excerpt when excerpts are on. Empty text gives an empty group, which slog
// handlers drop.
func (r *Redactor) Attr(key, s string) slog.Attr {
	if s == "" {
		return slog.Group(key)
	}
	f := r.Fingerprint(s)
	if r.excerpt {
		return slog.Group(key, slog.Int("len", f.Len), slog.String("hash", f.Hash), slog.String("excerpt", Excerpt(s, r.excerptLen)))
	}
	return slog.Group(key, slog.Int("len", f.Len), slog.String("hash", f.Hash))
}

// ErrorAttr is Attr for an error's text; a nil error gives an empty group.
func (r *Redactor) ErrorAttr(key string, err error) slog.Attr {
	if err == nil {
		return slog.Group(key)
	}
	return r.Attr(key, err.Error())
}

// Summary is the one-line form for a stored field (a journal note, an admin
// response, an event reason): "len=N hash=X", followed by ` excerpt="…"` when
// excerpts are on. Its length is bounded by the excerpt bound plus a few dozen bytes.
func (r *Redactor) Summary(s string) string {
	out := r.Fingerprint(s).String()
	if r.excerpt && s != "" {
		out += " excerpt=" + strconv.Quote(Excerpt(s, r.excerptLen))
	}
	return out
}

// Attr is Default.Attr.
func Attr(key, s string) slog.Attr { return Default.Attr(key, s) }

// ErrorAttr is Default.ErrorAttr.
func ErrorAttr(key string, err error) slog.Attr { return Default.ErrorAttr(key, err) }

// Summary is Default.Summary.
func Summary(s string) string { return Default.Summary(s) }

// Of is Default.Fingerprint.
func Of(s string) Fingerprint { return Default.Fingerprint(s) }
