package openairoute_test

import (
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"
	"google.golang.org/adk/v2/model/openaimodel"

	"github.com/agentbreaker/agentbreaker/breakertest/openaifake"
	"github.com/agentbreaker/agentbreaker/modelfailover/openairoute"
)

func TestNewNamesAMissingModel(t *testing.T) {
	_, err := openairoute.New(t.Context(), openairoute.Config{})
	require.ErrorIs(t, err, openairoute.ErrNoModel)
	require.Contains(t, err.Error(), "Config.Model")
	require.Panics(t, func() { openairoute.MustNew(t.Context(), openairoute.Config{}) })
}

// The caller's own WithMaxRetries does not turn openai-go's retries back on, and
// the caller's HTTP client is copied, not changed.
func TestNewKeepsRetriesOffAndTheCallersClient(t *testing.T) {
	oai := openaifake.Start(t, openaifake.Config{})
	require.NoError(t, oai.Fail(openaifake.Failure{Code: 503}))
	hc := &http.Client{Transport: oai.Transport()}
	llm, err := openairoute.New(t.Context(), openairoute.Config{Model: gpt, Client: openaimodel.ClientConfig{
		APIKey: "k", BaseURL: oai.URL(), HTTPClient: hc, Options: []option.RequestOption{option.WithMaxRetries(5)}}})
	require.NoError(t, err)
	require.Equal(t, gpt, llm.Name())
	require.Equal(t, oai.Transport(), hc.Transport, "the caller's client was changed")
	for _, err := range llm.GenerateContent(t.Context(), request(), false) {
		require.Error(t, err)
	}
	require.Equal(t, []string{"0"}, oai.RetryCounts())
}
