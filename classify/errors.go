package classify

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"

	"google.golang.org/genai"
)

// LocalRejection is implemented by errors that stopped a call before it was
// sent, such as an open circuit breaker or a full bulkhead. Such a call
// never reached the dependency, so it classifies as FailedBeforeSend and
// Neutral: counting it would let a breaker keep itself open.
//
// RejectedLocally names the reason and should return one of the Class
// constants, normally [ClassBreakerOpen] or [ClassBulkheadFull]. Any string
// that is not a failure class is reported as ClassBreakerOpen, so a typo
// cannot add a metric label.
type LocalRejection interface {
	error
	RejectedLocally() string
}

// Error classifies the error returned by a call made under ctx, using the
// default rules. ctx is the caller's context and may be nil when it is not
// known; when it is done, the error is put down to the caller rather than
// the dependency (see [Classify]). A nil err is a success.
func Error(ctx context.Context, err error) Classification {
	return Classify(Input{Context: ctx, Err: err})
}

// timeoutError matches errors that can say they were a timeout, as
// net.Error, url.Error, os.ErrDeadlineExceeded and http.Client's timeout do.
type timeoutError interface {
	error
	Timeout() bool
}

// classifyError applies the error rules, most specific first. err must not
// be nil.
func classifyError(err error) Classification {
	if r, ok := errors.AsType[LocalRejection](err); ok {
		return rejection(r)
	}
	if e, ok := errors.AsType[*ToolError](err); ok && e != nil {
		return e.classification()
	}
	if e, ok := errors.AsType[genai.APIError](err); ok {
		return apiError(e)
	}
	if e, ok := errors.AsType[*genai.APIError](err); ok && e != nil {
		return apiError(*e)
	}
	if c, ok := requestConfigError(err); ok {
		return c // refused by net/http before a connection: our request, not the dependency
	}
	if c, ok := tlsError(err); ok {
		return c
	}
	if c, ok := dialError(err); ok {
		return c
	}
	// Past this point the request may have been written, so nothing below
	// can be FailedBeforeSend.
	switch {
	case errors.Is(err, context.DeadlineExceeded), isTimeout(err):
		return ForClass(ClassTimeout)
	case errors.Is(err, context.Canceled):
		return ForClass(ClassCanceled)
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, syscall.ECONNABORTED):
		return ForClass(ClassConnectionReset)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF),
		errors.Is(err, net.ErrClosed):
		return ForClass(ClassTransport)
	}
	if _, ok := errors.AsType[*net.OpError](err); ok {
		return ForClass(ClassTransport)
	}
	if c, ok := mcpError(err); ok {
		return c // the MCP server answered: its words say what happened
	}
	if strings.Contains(errorText(err), "Client.Timeout exceeded") {
		// http.Client's timeout, after something flattened it to text.
		return ForClass(ClassTimeout)
	}
	return ForClass(ClassUnclassified)
}

// rejection classifies a LocalRejection.
func rejection(r LocalRejection) Classification {
	return Classification{Outcome: FailedBeforeSend, Class: rejectionClass(r.RejectedLocally()), Verdict: Neutral}
}

// rejectionClass turns a reason given for a local rejection into a class,
// falling back to ClassBreakerOpen for anything that is not a failure class.
func rejectionClass(reason string) Class {
	c := Class(reason)
	if !c.Known() || c == ClassNone {
		return ClassBreakerOpen
	}
	return c
}

// tlsError recognises TLS failures. Certificate problems, and a peer that
// does not speak TLS, are our configuration to fix: the dependency was
// never reached, so they are Neutral and flagged as ConfigFault. Alerts
// and other handshake failures are the remote end misbehaving and count.
func tlsError(err error) (Classification, bool) {
	if isCertificateError(err) {
		return ForClass(ClassTLSConfig), true
	}
	if _, ok := errors.AsType[tls.RecordHeaderError](err); ok {
		return ForClass(ClassTLSConfig), true
	}
	if errors.Is(err, http.ErrSchemeMismatch) {
		// net/http's name for a RecordHeaderError from a plain-HTTP peer.
		return ForClass(ClassTLSConfig), true
	}
	if _, ok := errors.AsType[tls.AlertError](err); ok {
		return ForClass(ClassTLS), true
	}
	// An alert received from the peer arrives as an OpError around an
	// unexported type.
	if oe, ok := errors.AsType[*net.OpError](err); ok && oe.Op == "remote error" {
		return ForClass(ClassTLS), true
	}
	if _, ok := errors.AsType[*tls.ECHRejectionError](err); ok {
		return ForClass(ClassTLSConfig), true
	}
	return Classification{}, false
}

func isCertificateError(err error) bool {
	if _, ok := errors.AsType[*tls.CertificateVerificationError](err); ok {
		return true
	}
	if _, ok := errors.AsType[x509.UnknownAuthorityError](err); ok {
		return true
	}
	if _, ok := errors.AsType[x509.HostnameError](err); ok {
		return true
	}
	if _, ok := errors.AsType[x509.CertificateInvalidError](err); ok {
		return true
	}
	if _, ok := errors.AsType[x509.SystemRootsError](err); ok {
		return true
	}
	return false
}

// dialError recognises failures while connecting, when nothing of the
// request has been written yet. url.Error and net.OpError wrap these, so
// they are found anywhere in the chain.
func dialError(err error) (Classification, bool) {
	if oe, ok := errors.AsType[*net.OpError](err); ok && (oe.Op == "dial" || oe.Op == "proxyconnect") {
		switch {
		case errors.Is(err, context.Canceled):
			return of(ClassCanceled, FailedBeforeSend), true
		case isDNS(err):
			return ForClass(ClassDNS), true
		case errors.Is(err, syscall.ECONNREFUSED):
			return ForClass(ClassConnectionRefused), true
		case errors.Is(err, context.DeadlineExceeded), isTimeout(oe):
			return ForClass(ClassConnectTimeout), true
		}
		return of(ClassTransport, FailedBeforeSend), true
	}
	switch {
	case isDNS(err):
		return ForClass(ClassDNS), true
	case errors.Is(err, syscall.ECONNREFUSED):
		return ForClass(ClassConnectionRefused), true
	case isTimeout(err) && strings.Contains(errorText(err), "TLS handshake timeout"):
		// http.Transport's TLSHandshakeTimeout, an unexported type.
		return ForClass(ClassConnectTimeout), true
	}
	return Classification{}, false
}

func isDNS(err error) bool {
	_, ok := errors.AsType[*net.DNSError](err)
	return ok
}

// isTimeout reports whether any error in err's tree says it is a timeout.
// errors.As is not enough: it stops at the first error with a Timeout
// method, and url.Error has one that only looks one level down.
func isTimeout(err error) bool {
	return anyInTree(err, func(e error) bool {
		t, ok := e.(timeoutError)
		return ok && t.Timeout()
	})
}

// anyInTree reports whether f holds for err or any error it wraps, through
// both Unwrap() error and Unwrap() []error. The depth limit guards against
// an error that wraps itself.
func anyInTree(err error, f func(error) bool) bool {
	var walk func(error, int) bool
	walk = func(e error, depth int) bool {
		if e == nil || depth > 100 {
			return false
		}
		if f(e) {
			return true
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			return walk(u.Unwrap(), depth+1)
		case interface{ Unwrap() []error }:
			for _, inner := range u.Unwrap() {
				if walk(inner, depth+1) {
					return true
				}
			}
		}
		return false
	}
	return walk(err, 0)
}

// errorText returns err.Error(), or "" if that panics, as Error methods on
// nil pointers do. Classification must not crash the caller.
func errorText(err error) (s string) {
	defer func() {
		if recover() != nil {
			s = ""
		}
	}()
	return err.Error()
}
