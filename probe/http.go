package probe

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/agentbreaker/agentbreaker/httptransport"
)

// HTTPConfig configures HTTPGet.
type HTTPConfig struct {
	// URL is the health endpoint, an absolute http or https URL. Required.
	URL string
	// Base sends the request. Defaults to http.DefaultTransport. The request goes
	// through an httptransport.Transport without a dependency map on top of it, so it
	// is classified like any HTTP call but never asks the breaker (the prober holds
	// the probe's permit).
	Base http.RoundTripper
	// Header is sent with every probe (an API key, say). Defaults to none.
	Header http.Header
}

// maxBody is how much of a health answer is read (and dropped) so the connection can
// be reused.
const maxBody = 64 << 10

// HTTPGet returns a Func that GETs cfg.URL. A 2xx answer is healthy; a 5xx, a 429, a
// refused connection or a timeout fails the probe as the same answer would fail a
// call; any other status (a 404 from a mistyped URL, a 401) fails it too, since
// only a healthy answer may close a breaker. The error keeps the status's class, so
// the prober's record names a 4xx's problem (Result.Problem). It returns an error naming the field
// when the URL cannot work.
func HTTPGet(cfg HTTPConfig) (Func, error) {
	u, err := url.Parse(cfg.URL)
	switch {
	case cfg.URL == "":
		return nil, bad("HTTPConfig.URL", cfg.URL, "is required")
	case err != nil:
		return nil, bad("HTTPConfig.URL", cfg.URL, "does not parse: "+err.Error())
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, bad("HTTPConfig.URL", cfg.URL, "must be an http or https URL")
	case u.Host == "":
		return nil, bad("HTTPConfig.URL", cfg.URL, "has no host")
	}
	tr, err := httptransport.New(httptransport.Config{Base: cfg.Base, IdempotencyHeader: "-"})
	if err != nil {
		return nil, err
	}
	client := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	target := u.String()
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err != nil {
			return err
		}
		for k, vs := range cfg.Header {
			req.Header[k] = append([]string(nil), vs...)
		}
		resp, err := client.Do(req)
		c := httptransport.Classify(ctx, resp, err)
		if err != nil {
			return &ClassifiedError{Classification: c, Err: err}
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
		_ = resp.Body.Close()
		if resp.StatusCode/100 == 2 {
			return nil
		}
		if c.StatusCode == 0 {
			c.StatusCode = resp.StatusCode
		}
		// A 3xx or 4xx keeps its class: the prober fails any error, and names a
		// 4xx (a wrong URL or credentials: "neutral") in its log record.
		return &ClassifiedError{Classification: c, Err: fmt.Errorf("probe: GET %s answered %s", target, resp.Status)}
	}, nil
}
