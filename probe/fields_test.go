package probe_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/probe"
)

// Every Check field and HTTPConfig field is read: changing it changes what happens.
func TestCheckFieldsAreRead(t *testing.T) {
	var timeouts []time.Duration
	r := newRig(t, breaker.Policy{}, func(context.Context) error { return errors.New("teapot") }, func(c *probe.Config) {
		c.Checks[0].Name = "GET /healthz"
		c.Checks[0].Timeout = 2 * time.Second
		c.Checks[0].Classify = func(_ context.Context, err error) classify.Classification {
			if err != nil && err.Error() == "teapot" {
				return classify.ForClass(classify.ClassAuth) // this dependency's "teapot" means a bad key
			}
			return classify.Error(context.Background(), err)
		}
		after := c.AfterFunc
		c.AfterFunc = func(d time.Duration, f func()) func() bool {
			timeouts = append(timeouts, d)
			return after(d, f)
		}
	})
	r.trip(t)
	r.clk.Advance(30 * time.Second)
	r.p.ProbeDue(t.Context())
	require.Equal(t, []time.Duration{2 * time.Second}, timeouts, "Timeout bounds the probe")
	require.Equal(t, breaker.Open, r.b.State(), "an error is never a healthy probe, whatever Classify says")
	require.Equal(t, classify.ClassAuth, r.last().Classification.Class, "Classify decided the class")
	require.Equal(t, "neutral", r.last().Problem)
	require.Contains(t, r.log.String(), "class=auth")
	require.Equal(t, "GET /healthz", r.last().Check)
	require.Contains(t, r.log.String(), `check="GET /healthz"`)
}

type countingTransport struct {
	n    atomic.Int32
	base http.RoundTripper
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.base.RoundTrip(req)
}

func TestHTTPConfigFieldsAreRead(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != "secret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	defer srv.Close()
	ctr := &countingTransport{base: http.DefaultTransport}
	without, err := probe.HTTPGet(probe.HTTPConfig{URL: srv.URL, Base: ctr})
	require.NoError(t, err)
	err = without(t.Context())
	require.Error(t, err, "no key: a 401 is not healthy")
	require.True(t, strings.Contains(err.Error(), "401"), err.Error())
	with, err := probe.HTTPGet(probe.HTTPConfig{URL: srv.URL, Base: ctr, Header: http.Header{"X-Api-Key": {"secret"}}})
	require.NoError(t, err)
	require.NoError(t, with(t.Context()), "Header is sent")
	require.Equal(t, int32(2), ctr.n.Load(), "Base sends the requests")
}
