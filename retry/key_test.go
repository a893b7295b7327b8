package retry_test

import (
	"context"
	"math"
	"testing"

	"github.com/agentbreaker/agentbreaker/retry"
	"github.com/stretchr/testify/require"
)

func TestOperationKey(t *testing.T) {
	key := func(tool string, args map[string]any) retry.Key {
		k, err := retry.OperationKey(tool, args)
		require.NoError(t, err)
		return k
	}
	base := key("send", map[string]any{"to": "a", "n": 1, "opts": map[string]any{"x": true, "y": []any{1, "b"}}})
	tests := []struct {
		name string
		tool string
		args map[string]any
		same bool
	}{
		{"same call, keys in another order, number as float", "send", map[string]any{"opts": map[string]any{"y": []any{1.0, "b"}, "x": true}, "n": 1.0, "to": "a"}, true},
		{"another tool", "send2", map[string]any{"to": "a", "n": 1, "opts": map[string]any{"x": true, "y": []any{1, "b"}}}, false},
		{"another value", "send", map[string]any{"to": "b", "n": 1, "opts": map[string]any{"x": true, "y": []any{1, "b"}}}, false},
		{"list order matters", "send", map[string]any{"to": "a", "n": 1, "opts": map[string]any{"x": true, "y": []any{"b", 1}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.same, key(tt.tool, tt.args) == base)
		})
	}
	require.Equal(t, key("t", nil), key("t", map[string]any{}), "no arguments and empty arguments are the same call")
	require.Len(t, string(base), 64)
}

func TestOperationKeyRejectsUnencodableArguments(t *testing.T) {
	tests := []struct {
		name string
		args map[string]any
	}{
		{"channel", map[string]any{"c": make(chan int)}},
		{"function", map[string]any{"f": func() {}}},
		{"NaN", map[string]any{"x": math.NaN()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := retry.OperationKey("tool_x", tt.args)
			require.ErrorContains(t, err, `retry: tool "tool_x": arguments cannot be encoded`)
		})
	}
}

func TestCanonicalArgsDoesNotEscapeHTML(t *testing.T) {
	b, err := retry.CanonicalArgs(map[string]any{"q": "<a&b>", "a": 1})
	require.NoError(t, err)
	require.Equal(t, `{"a":1,"q":"<a&b>"}`, string(b))
}

func TestIdempotencyKeys(t *testing.T) {
	a, b := retry.NewIdempotencyKey(), retry.NewIdempotencyKey()
	require.Len(t, a, 26)
	require.NotEqual(t, a, b)
	ctx := retry.WithIdempotencyKey(context.Background(), a)
	require.Equal(t, a, retry.IdempotencyKeyFrom(ctx))
	require.Empty(t, retry.IdempotencyKeyFrom(context.Background()))
}
