package modelfailover_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/modelfailover"
)

// okTransport answers every request with a small JSON 200, in process.
type okTransport struct{}

func (okTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(`{"candidates":[{}]}`)), Request: req}, nil
}

// BenchmarkTransportRoundTrip is the cost NewTransport and Failover.Transport add to
// a request that no attempt sent (a client shared with other traffic). Record with
// go test -run '^$' -bench BenchmarkTransportRoundTrip -benchmem -count 10 ./modelfailover/
func BenchmarkTransportRoundTrip(b *testing.B) {
	f := modelfailover.MustNew(modelfailover.Config{Routes: []modelfailover.Route{{Model: "m", Region: "r"}},
		Breakers: dependencymap.MustNew(dependencymap.Config{}), Logger: discardLogger()})
	for _, tc := range []struct {
		name string
		rt   http.RoundTripper
	}{
		{"base", okTransport{}},
		{"NewTransport", modelfailover.NewTransport(okTransport{})},
		{"Failover.Transport", f.Transport(okTransport{})},
	} {
		b.Run(tc.name, func(b *testing.B) {
			req, _ := http.NewRequest(http.MethodPost, "http://model.invalid/v1/responses", nil)
			b.ReportAllocs()
			for b.Loop() {
				resp, _ := tc.rt.RoundTrip(req)
				resp.Body.Close()
			}
		})
	}
}
