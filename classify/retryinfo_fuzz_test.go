package classify_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/classify"
)

const retryInfoType = "type.googleapis.com/google.rpc.RetryInfo"

// FuzzRetryInfoDelay feeds arbitrary error details, as JSON, to the RetryInfo parser: it
// must never panic, never return a negative delay, and return (0, false) when it finds
// none.
func FuzzRetryInfoDelay(f *testing.F) {
	for _, s := range []string{
		`[{"@type": "` + retryInfoType + `", "retryDelay": "40s"}]`,
		`[{"@type": "` + retryInfoType + `", "retryDelay": {"seconds": 3, "nanos": 500000000}}]`,
		`[{"@type": "` + retryInfoType + `", "retry_delay": "0.000000001s"}]`,
		`[{"@type": "x"}, {"@type": "` + retryInfoType + `", "retryDelay": "-1s"}, {"@type": "` + retryInfoType + `", "retryDelay": "2s"}]`,
		`[{"@type": "` + retryInfoType + `", "retryDelay": {"seconds": "9223372036854775807"}}]`,
		`[{"@type": "` + retryInfoType + `", "retryDelay": {"seconds": 1e300}}]`,
		`[{"@type": "` + retryInfoType + `", "retryDelay": null}]`,
		`[]`, `null`, `[{}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var details []map[string]any
		if json.Unmarshal(data, &details) != nil {
			return
		}
		got, ok := classify.RetryInfoDelay(details)
		require.GreaterOrEqual(t, got, time.Duration(0))
		if !ok {
			require.Zero(t, got)
		}
	})
}

// FuzzRetryInfoDelayString fuzzes the protobuf JSON duration string: what it accepts is
// decimal seconds with at most nine fractional digits and an "s", and the delay it
// returns is exactly that many seconds.
func FuzzRetryInfoDelayString(f *testing.F) {
	for _, s := range []string{"40s", "0.5s", "1.000000001s", " 7s ", "1.0000000001s", "-1s", "s", ".5s",
		"9223372036s", "9223372037s", "1e3s", "0x10s", "٣s", "40", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := classify.RetryInfoDelay([]map[string]any{{"@type": retryInfoType, "retryDelay": s}})
		require.GreaterOrEqual(t, got, time.Duration(0))
		if !ok {
			require.Zero(t, got)
			return
		}
		num, hasS := strings.CutSuffix(strings.TrimSpace(s), "s")
		require.True(t, hasS, "accepted %q without its s", s)
		whole, frac, _ := strings.Cut(num, ".")
		require.LessOrEqual(t, len(frac), 9)
		secs, err := strconv.ParseInt(whole, 10, 64)
		require.NoError(t, err, "accepted %q", s)
		nanos := int64(0)
		if frac != "" {
			n, err := strconv.ParseInt((frac + "000000000")[:9], 10, 64)
			require.NoError(t, err)
			nanos = n
		}
		require.Equal(t, time.Duration(secs)*time.Second+time.Duration(nanos), got, "%q", s)
		// The object form of the same duration gives the same delay.
		obj, ok := classify.RetryInfoDelay([]map[string]any{{"@type": retryInfoType,
			"retryDelay": map[string]any{"seconds": json.Number(fmt.Sprint(secs)), "nanos": float64(nanos)}}})
		if ok {
			require.Equal(t, got, obj)
		}
	})
}
