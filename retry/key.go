package retry

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// Key identifies a logical operation within one invocation: the tool's name and a hash
// of its canonical arguments. The model re-issuing the same call is the same Key.
type Key string

// OperationKey returns the Key of a call to tool with args. Arguments are hashed in a
// canonical form (JSON with sorted object keys), so the order of map iteration and the
// Go type of a whole number (int 1 or float64 1) do not matter. It fails, naming the tool, when the
// arguments cannot be encoded (a channel, a function, NaN).
func OperationKey(tool string, args map[string]any) (Key, error) {
	h, err := ArgsHash(args)
	if err != nil {
		return "", fmt.Errorf("retry: tool %q: %w", tool, err)
	}
	return keyOf(tool, h), nil
}

func keyOf(tool, argsHash string) Key {
	sum := sha256.Sum256([]byte(tool + "\x00" + argsHash))
	return Key(hex.EncodeToString(sum[:]))
}

// CanonicalArgs encodes args as canonical JSON: object keys sorted, no HTML escaping,
// numbers as encoding/json writes them. nil and an empty map both encode as {}.
func CanonicalArgs(args map[string]any) ([]byte, error) {
	if len(args) == 0 {
		return []byte("{}"), nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(args); err != nil {
		return nil, fmt.Errorf("arguments cannot be encoded: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// ArgsHash is the hex SHA-256 of CanonicalArgs(args).
func ArgsHash(args map[string]any) (string, error) {
	b, err := CanonicalArgs(args)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// NewIdempotencyKey returns a fresh random key (26 characters of base32, 130 bits),
// one per logical operation: every attempt of the operation sends the same key, so a
// dependency that honours keys applies it at most once.
func NewIdempotencyKey() string { return rand.Text() }

type idemKey struct{}

// WithIdempotencyKey returns a context that carries the operation's idempotency key to
// the code that sends the request (the httptransport package puts it in a header).
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, idemKey{}, key)
}

// IdempotencyKeyFrom returns the idempotency key in ctx, or "".
func IdempotencyKeyFrom(ctx context.Context) string {
	k, _ := ctx.Value(idemKey{}).(string)
	return k
}
