package telemetry_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/telemetry"
)

// agentbreaker_policy_info tells the version in force: a live change replaces its
// series, and a version that is not a clean label value is sanitised.
func TestPolicyInfoFollowsALiveChange(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	tel := telemetry.MustNew(telemetry.Config{Registerer: reg})
	crm := breaker.MustNew(breaker.Config{Name: "crm", Policy: breaker.Policy{Version: "v1"}})
	tel.Watch(breakerList{crm})
	_, body, _ := scrape(t, reg)
	require.Contains(t, body, `agentbreaker_policy_info{dependency="crm",version="v1"} 1`)

	require.NoError(t, crm.SetPolicy(breaker.Policy{Version: "v2\xff"}))
	_, body, _ = scrape(t, reg)
	require.Contains(t, body, "agentbreaker_policy_info{dependency=\"crm\",version=\"v2\ufffd\"} 1")
	require.False(t, strings.Contains(body, `version="v1"`), "the old version's series stays")
}
