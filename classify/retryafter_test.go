package classify_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/classify"
)

var refNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		value  string
		want   time.Duration
		wantOK bool
	}{
		{name: "seconds", value: "120", want: 2 * time.Minute, wantOK: true},
		{name: "zero", value: "0", want: 0, wantOK: true},
		{name: "surrounding space", value: " 5 ", want: 5 * time.Second, wantOK: true},
		{name: "leading zeros", value: "007", want: 7 * time.Second, wantOK: true},
		{name: "largest that fits", value: "9223372036", want: 9223372036 * time.Second, wantOK: true},
		{name: "one second too many", value: "9223372037"},
		{name: "overflows int64", value: "99999999999999999999999"},
		{name: "negative", value: "-5"},
		{name: "plus sign", value: "+5"},
		{name: "fraction", value: "1.5"},
		{name: "unit", value: "5s"},
		{name: "empty", value: ""},
		{name: "blank", value: "   "},
		{name: "garbage", value: "soon"},
		{name: "imf date ahead", value: "Sun, 01 Mar 2026 12:00:30 GMT", want: 30 * time.Second, wantOK: true},
		{name: "rfc 850 date ahead", value: "Sunday, 01-Mar-26 12:01:00 GMT", want: time.Minute, wantOK: true},
		{name: "ansi c date ahead", value: "Sun Mar  1 13:00:00 2026", want: time.Hour, wantOK: true},
		{name: "date now", value: "Sun, 01 Mar 2026 12:00:00 GMT", want: 0, wantOK: true},
		{name: "date passed", value: "Sat, 28 Feb 2026 12:00:00 GMT", want: 0, wantOK: true},
		{name: "date too far to fit", value: "Fri, 31 Dec 9999 23:59:59 GMT"},
		{name: "malformed date", value: "Sun, 32 Mar 2026 12:00:00 GMT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := classify.ParseRetryAfter(tt.value, refNow)
			require.Equal(t, tt.wantOK, ok)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestParseRetryAfterZeroNow(t *testing.T) {
	t.Parallel()
	// With no reference time the date is measured from the real clock, so
	// a date an hour from now gives roughly an hour.
	date := time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)
	got, ok := classify.ParseRetryAfter(date, time.Time{})
	require.True(t, ok)
	require.InDelta(t, float64(time.Hour), float64(got), float64(5*time.Second))
}

func TestRetryInfoDelay(t *testing.T) {
	t.Parallel()
	const typ = "type.googleapis.com/google.rpc.RetryInfo"
	tests := []struct {
		name    string
		details []map[string]any
		want    time.Duration
		wantOK  bool
	}{
		{name: "nil"},
		{name: "whole seconds", details: []map[string]any{retryInfo("40s")}, want: 40 * time.Second, wantOK: true},
		{name: "fraction", details: []map[string]any{retryInfo("0.5s")}, want: 500 * time.Millisecond, wantOK: true},
		{name: "nanosecond precision", details: []map[string]any{retryInfo("1.000000001s")}, want: time.Second + 1, wantOK: true},
		{name: "zero", details: []map[string]any{retryInfo("0s")}, want: 0, wantOK: true},
		{name: "seconds and nanos numbers", details: []map[string]any{retryInfo(map[string]any{"seconds": float64(2), "nanos": float64(250000000)})}, want: 2250 * time.Millisecond, wantOK: true},
		{name: "seconds as int64 string", details: []map[string]any{retryInfo(map[string]any{"seconds": "17"})}, want: 17 * time.Second, wantOK: true},
		{name: "only nanos", details: []map[string]any{retryInfo(map[string]any{"nanos": json.Number("5")})}, want: 5, wantOK: true},
		{name: "snake case field", details: []map[string]any{{"@type": typ, "retry_delay": "3s"}}, want: 3 * time.Second, wantOK: true},
		{name: "other details first", details: []map[string]any{
			{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "RATE_LIMIT_EXCEEDED"},
			{"@type": "type.googleapis.com/google.rpc.Help"},
			retryInfo("12s"),
		}, want: 12 * time.Second, wantOK: true},
		{name: "first valid entry wins", details: []map[string]any{retryInfo("soon"), retryInfo("4s"), retryInfo("9s")}, want: 4 * time.Second, wantOK: true},
		{name: "negative", details: []map[string]any{retryInfo("-1s")}},
		{name: "negative object", details: []map[string]any{retryInfo(map[string]any{"seconds": -1})}},
		{name: "nanos out of range", details: []map[string]any{retryInfo(map[string]any{"seconds": 1, "nanos": 1e9})}},
		{name: "seconds of wrong type", details: []map[string]any{retryInfo(map[string]any{"seconds": true})}},
		{name: "ten fractional digits", details: []map[string]any{retryInfo("1.0000000001s")}},
		{name: "no unit", details: []map[string]any{retryInfo("40")}},
		{name: "milliseconds unit", details: []map[string]any{retryInfo("40ms")}},
		{name: "empty fraction", details: []map[string]any{retryInfo("1.s")}},
		{name: "only unit", details: []map[string]any{retryInfo("s")}},
		{name: "overflow", details: []map[string]any{retryInfo("315576000000s")}},
		{name: "overflow by nanos", details: []map[string]any{retryInfo("9223372036.999999999s")}},
		{name: "wrong type name", details: []map[string]any{{"@type": typ + "X", "retryDelay": "1s"}}},
		{name: "type not a string", details: []map[string]any{{"@type": 7, "retryDelay": "1s"}}},
		{name: "nil entry", details: []map[string]any{nil}},
		{name: "delay missing", details: []map[string]any{{"@type": typ}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, ok := classify.RetryInfoDelay(tt.details)
			require.Equal(t, tt.wantOK, ok)
			require.Equal(t, tt.want, got)
		})
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{
		"0", "120", " 5 ", "-1", "+3", "1.5", "9223372036", "9223372037", "99999999999999999999",
		"Sun, 01 Mar 2026 12:00:30 GMT", "Sunday, 01-Mar-26 12:01:00 GMT", "Sun Mar  1 13:00:00 2026",
		"Fri, 31 Dec 9999 23:59:59 GMT", "Mon, 01 Jan 0001 00:00:00 GMT", "", "soon", "\x00", "٣",
	} {
		f.Add(s, int64(0))
		f.Add(s, refNow.Unix())
	}
	f.Fuzz(func(t *testing.T, value string, nowUnix int64) {
		now := time.Unix(nowUnix, 0)
		if nowUnix == 0 {
			now = refNow
		}
		got, ok := classify.ParseRetryAfter(value, now)
		require.GreaterOrEqual(t, got, time.Duration(0))
		if !ok {
			require.Zero(t, got)
			return
		}
		if v := strings.TrimSpace(value); v != "" && strings.Trim(v, "0123456789") == "" {
			n, err := strconv.ParseInt(v, 10, 64)
			require.NoError(t, err)
			require.Equal(t, time.Duration(n)*time.Second, got)
		}
		// The header form used by the classifier agrees with the parser.
		h := http.Header{"Retry-After": []string{value}}
		c := classify.HTTPStatus(http.StatusServiceUnavailable, h, now)
		require.Equal(t, got, c.RetryAfter)
	})
}
