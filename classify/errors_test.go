package classify_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentbreaker/agentbreaker/classify"
)

// rejected is a LocalRejection as the breaker and bulkhead packages return.
type rejected struct{ reason string }

func (r rejected) Error() string           { return "rejected: " + r.reason }
func (r rejected) RejectedLocally() string { return r.reason }

// fakeTimeout stands in for unexported timeout errors of net/http.
type fakeTimeout struct{ msg string }

func (e fakeTimeout) Error() string { return e.msg }
func (e fakeTimeout) Timeout() bool { return true }

// nilPanics has an Error method that dereferences its receiver.
type nilPanics struct{ msg string }

func (e *nilPanics) Error() string { return e.msg }

func dial(err error) error {
	return &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, Err: err}
}

func sysErr(op string, errno syscall.Errno) error {
	return &net.OpError{Op: op, Net: "tcp", Err: os.NewSyscallError(op, errno)}
}

func inURL(err error) error { return &url.Error{Op: "Get", URL: "http://example.test/", Err: err} }

func TestError(t *testing.T) {
	t.Parallel()
	beforeSend := func(c *classify.Classification) { c.Outcome = classify.FailedBeforeSend }
	tests := []struct {
		name string
		err  error
		want classify.Classification
	}{
		{name: "nil", err: nil, want: classify.ForClass(classify.ClassNone)},

		{name: "refused dial", err: dial(os.NewSyscallError("connect", syscall.ECONNREFUSED)),
			want: classify.ForClass(classify.ClassConnectionRefused)},
		{name: "refused dial in url.Error", err: inURL(dial(os.NewSyscallError("connect", syscall.ECONNREFUSED))),
			want: classify.ForClass(classify.ClassConnectionRefused)},
		{name: "refused errno wrapped by fmt", err: fmt.Errorf("calling crm: %w", syscall.ECONNREFUSED),
			want: classify.ForClass(classify.ClassConnectionRefused)},
		{name: "dns in dial", err: inURL(dial(&net.DNSError{Err: "no such host", Name: "crm.invalid", IsNotFound: true})),
			want: classify.ForClass(classify.ClassDNS)},
		{name: "bare dns error", err: fmt.Errorf("lookup: %w", &net.DNSError{Err: "server misbehaving", Name: "x"}),
			want: classify.ForClass(classify.ClassDNS)},
		{name: "dns timeout is still dns", err: dial(&net.DNSError{Err: "i/o timeout", Name: "x", IsTimeout: true}),
			want: classify.ForClass(classify.ClassDNS)},
		{name: "connect timeout", err: inURL(dial(os.ErrDeadlineExceeded)),
			want: classify.ForClass(classify.ClassConnectTimeout)},
		{name: "connect deadline", err: dial(context.DeadlineExceeded),
			want: classify.ForClass(classify.ClassConnectTimeout)},
		{name: "tls handshake timeout", err: inURL(fakeTimeout{"net/http: TLS handshake timeout"}),
			want: classify.ForClass(classify.ClassConnectTimeout)},
		{name: "unreachable network while dialing", err: dial(os.NewSyscallError("connect", syscall.ENETUNREACH)),
			want: with(classify.ClassTransport, beforeSend)},
		{name: "proxy connect failure", err: &net.OpError{Op: "proxyconnect", Net: "tcp", Err: errors.New("proxy said no")},
			want: with(classify.ClassTransport, beforeSend)},
		{name: "dial cancelled", err: inURL(dial(context.Canceled)),
			want: with(classify.ClassCanceled, beforeSend)},

		{name: "certificate verification", err: inURL(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}),
			want: classify.ForClass(classify.ClassTLSConfig)},
		{name: "unknown authority", err: fmt.Errorf("x: %w", x509.UnknownAuthorityError{}),
			want: classify.ForClass(classify.ClassTLSConfig)},
		{name: "hostname mismatch", err: inURL(x509.HostnameError{Host: "crm.example"}),
			want: classify.ForClass(classify.ClassTLSConfig)},
		{name: "expired certificate", err: x509.CertificateInvalidError{Reason: x509.Expired},
			want: classify.ForClass(classify.ClassTLSConfig)},
		{name: "no system roots", err: x509.SystemRootsError{},
			want: classify.ForClass(classify.ClassTLSConfig)},
		{name: "peer does not speak tls", err: inURL(tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}),
			want: classify.ForClass(classify.ClassTLSConfig)},
		{name: "plain http peer", err: inURL(http.ErrSchemeMismatch),
			want: classify.ForClass(classify.ClassTLSConfig)},
		{name: "tls alert", err: inURL(fmt.Errorf("tls: handshake failure%w", tls.AlertError(40))),
			want: classify.ForClass(classify.ClassTLS)},
		{name: "remote tls alert", err: inURL(&net.OpError{Op: "remote error", Err: errors.New("tls: handshake failure")}),
			want: classify.ForClass(classify.ClassTLS)},

		{name: "context deadline", err: context.DeadlineExceeded,
			want: classify.ForClass(classify.ClassTimeout)},
		{name: "deadline wrapped", err: fmt.Errorf("failed to call model: %w", context.DeadlineExceeded),
			want: classify.ForClass(classify.ClassTimeout)},
		{name: "read timeout", err: inURL(&net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}),
			want: classify.ForClass(classify.ClassTimeout)},
		{name: "http client timeout type", err: inURL(fakeTimeout{"context deadline exceeded (Client.Timeout exceeded while awaiting headers)"}),
			want: classify.ForClass(classify.ClassTimeout)},
		{name: "http client timeout flattened to text", err: errors.New(`Get "http://x": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`),
			want: classify.ForClass(classify.ClassTimeout)},
		{name: "timeout deep under url.Error", err: inURL(fmt.Errorf("model: %w", fakeTimeout{"stream stalled"})),
			want: classify.ForClass(classify.ClassTimeout)},
		{name: "cancelled by someone else", err: fmt.Errorf("tool: %w", context.Canceled),
			want: classify.ForClass(classify.ClassCanceled)},

		{name: "reset on read", err: inURL(sysErr("read", syscall.ECONNRESET)),
			want: classify.ForClass(classify.ClassConnectionReset)},
		{name: "broken pipe on write", err: sysErr("write", syscall.EPIPE),
			want: classify.ForClass(classify.ClassConnectionReset)},
		{name: "connection aborted", err: fmt.Errorf("x: %w", syscall.ECONNABORTED),
			want: classify.ForClass(classify.ClassConnectionReset)},
		{name: "unexpected eof", err: fmt.Errorf("reading body: %w", io.ErrUnexpectedEOF),
			want: classify.ForClass(classify.ClassTransport)},
		{name: "eof from transport", err: inURL(io.EOF),
			want: classify.ForClass(classify.ClassTransport)},
		{name: "use of closed connection", err: &net.OpError{Op: "read", Err: net.ErrClosed},
			want: classify.ForClass(classify.ClassTransport)},
		{name: "other read error", err: &net.OpError{Op: "read", Err: errors.New("odd")},
			want: classify.ForClass(classify.ClassTransport)},

		{name: "open breaker", err: rejected{"breaker_open"},
			want: classify.ForClass(classify.ClassBreakerOpen)},
		{name: "full bulkhead wrapped", err: fmt.Errorf("tool search: %w", rejected{"bulkhead_full"}),
			want: classify.ForClass(classify.ClassBulkheadFull)},
		{name: "rejection claiming no failure", err: rejected{"none"},
			want: classify.ForClass(classify.ClassBreakerOpen)},
		{name: "rejection with unknown reason", err: rejected{"queue is full, try later"},
			want: classify.ForClass(classify.ClassBreakerOpen)},

		{name: "plain error", err: errors.New("boom"), want: classify.ForClass(classify.ClassUnclassified)},
		{name: "typed nil error does not panic", err: (*nilPanics)(nil), want: classify.ForClass(classify.ClassUnclassified)},
		{name: "joined errors find the network cause", err: errors.Join(errors.New("cleanup failed"), sysErr("read", syscall.ECONNRESET)),
			want: classify.ForClass(classify.ClassConnectionReset)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := classify.Error(context.Background(), tt.err)
			require.Equal(t, tt.want, got)
			requireValid(t, got)
			var unknownCtx context.Context // nil: the caller's context is not known
			require.Equal(t, got, classify.Error(unknownCtx, tt.err), "a live context and no context agree")
		})
	}
}

// Every class the error rules can produce keeps its text out of the class.
func TestErrorTextNeverBecomesClass(t *testing.T) {
	t.Parallel()
	got := classify.Error(context.Background(), rejected{"bulkhead_full; DROP TABLE"})
	require.Equal(t, classify.ClassBreakerOpen, got.Class)
}
