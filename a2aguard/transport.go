package a2aguard

import (
	"context"
	"net/http"
	"sync"
)

// a2a-go's JSON-RPC and REST transports turn a failed exchange into plain fmt errors
// ("failed to send HTTP request: ...", "unexpected HTTP status: 503 Service
// Unavailable"): the status code, the Retry-After header and the dial error are gone
// by the time the error reaches adk-go. The guard's round tripper sits under the a2a
// client and writes what happened into the record the request's context carries.

// record is what the HTTP exchanges of one request to the remote agent showed. The
// round tripper writes it (an exchange may run on a transport goroutine), the client
// wrapper reads it once the a2a call returned.
type record struct {
	mu     sync.Mutex
	sent   int         // exchanges handed to the base transport
	status int         // status of the last response, 0 if none
	header http.Header // headers of the last non-200 response
	err    error       // the base transport's error, if the last exchange failed
}

func (r *record) snapshot() (sent, status int, header http.Header, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sent, r.status, r.header, r.err
}

type recordKey struct{}

func withRecord(ctx context.Context, r *record) context.Context {
	return context.WithValue(ctx, recordKey{}, r)
}

// roundTripper records each exchange of a guarded request in the request's record.
// Requests without one (the agent card, a cancel sent after the call) pass through.
// It is safe for concurrent use.
type roundTripper struct {
	base http.RoundTripper
}

func (t *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	rec, _ := req.Context().Value(recordKey{}).(*record)
	if rec == nil {
		return t.base.RoundTrip(req)
	}
	resp, err := t.base.RoundTrip(req)
	rec.mu.Lock()
	rec.sent++
	rec.err = err
	rec.status, rec.header = 0, nil
	if resp != nil {
		rec.status = resp.StatusCode
		if resp.StatusCode != http.StatusOK {
			rec.header = resp.Header.Clone()
		}
	}
	rec.mu.Unlock()
	return resp, err
}
