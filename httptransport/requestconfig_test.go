package httptransport_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
)

// TestMisconfiguredRequestIsRequestConfig: a request the base transport refuses
// before any connection because of how it was built (a scheme it does not speak, no
// host) is the caller's configuration, request_config, as it is without this
// transport; its breaker ignores it, however many there are.
func TestMisconfiguredRequestIsRequestConfig(t *testing.T) {
	const host = "api.internal:8080"
	f := newFixture(t, host, breaker.Policy{MinimumCalls: 1}, nil)
	for i := range 10 {
		for _, target := range []string{"ftp://" + host + "/v1", "?city=Paris"} {
			req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, target, nil)
			require.NoError(t, err)
			_, err = f.cli.Do(req)
			require.Error(t, err)
			c := outcomeOf(t, err)
			require.Equal(t, classify.ClassRequestConfig, c.Class, "call %d to %q: %v", i, target, err)
			require.Equal(t, classify.FailedBeforeSend, c.Outcome)
			require.Equal(t, classify.Neutral, c.Verdict)
			// What the callbacks see: the same class, and the cause found through the
			// client's url.Error and the transport's Error.
			require.Equal(t, classify.ClassRequestConfig, classify.Error(context.Background(), fmt.Errorf("tool: %w", err)).Class)
			_, ok := classify.RequestConfigCause(err)
			require.True(t, ok)
		}
	}
	require.Equal(t, breaker.Closed, f.b.State(), "a misconfiguration never opens the breaker")
	r := f.result()
	require.Equal(t, "api", r.Dependency, "the ftp request was the dependency's, and judged neutral")
	require.Equal(t, classify.ClassRequestConfig, r.Classification.Class)
}
