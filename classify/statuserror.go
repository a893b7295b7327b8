package classify

import (
	"net/http"
	"reflect"
	"sync"
)

// HTTPStatusError is implemented by errors that know the HTTP status of the
// answer that caused them. [Classify] reads the status (and the headers, when the
// error also has an HTTPHeader method) from the first error in the chain that
// implements it, so a provider SDK's error classifies as its status does without
// a transport in between. Implement it on your own client's error type to add a
// provider.
type HTTPStatusError interface {
	error
	HTTPStatusCode() int
}

// httpHeaderError is an error that also hands over the answer's headers (read
// for Retry-After and Retry-After-Ms).
type httpHeaderError interface {
	HTTPHeader() http.Header
}

// errorStatus finds an HTTP status in err's chain. It knows, besides
// [HTTPStatusError], the shape of the errors that Stainless-generated SDKs return
// (openai-go's *openai.Error, anthropic-sdk-go's *anthropic.Error): a struct with
// the exported fields StatusCode int and Response *http.Response. It reads only
// the status and the headers, never the body or the message, which hold the
// provider's words. This package imports no provider SDK.
func errorStatus(err error) (int, http.Header, bool) {
	for _, e := range chain(err) {
		if s, ok := e.(HTTPStatusError); ok {
			var h http.Header
			if hh, ok := e.(httpHeaderError); ok {
				h = hh.HTTPHeader()
			}
			if code := s.HTTPStatusCode(); code != 0 {
				return code, h, true
			}
		}
		if code, h, ok := stainlessStatus(e); ok {
			return code, h, true
		}
	}
	return 0, nil, false
}

// chain returns err and every error it wraps, depth first, at most 32 of them
// (an error chain has no bound of its own).
func chain(err error) []error {
	var out []error
	var walk func(error)
	walk = func(e error) {
		if e == nil || len(out) >= 32 {
			return
		}
		out = append(out, e)
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, x := range u.Unwrap() {
				walk(x)
			}
		}
	}
	walk(err)
	return out
}

// stainlessFields is where StatusCode and Response sit in a struct type, or
// ok false when the type does not have both.
type stainlessFields struct {
	status, response []int
	ok               bool
}

var (
	stainlessTypes sync.Map // reflect.Type -> stainlessFields
	responseType   = reflect.TypeFor[*http.Response]()
)

func stainlessStatus(e error) (int, http.Header, bool) {
	v := reflect.ValueOf(e)
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return 0, nil, false
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return 0, nil, false
	}
	t := v.Type()
	fi, seen := stainlessTypes.Load(t)
	if !seen {
		var f stainlessFields
		if sf, ok := t.FieldByName("StatusCode"); ok && sf.IsExported() && sf.Type.Kind() == reflect.Int {
			if rf, ok := t.FieldByName("Response"); ok && rf.IsExported() && rf.Type == responseType {
				f = stainlessFields{status: sf.Index, response: rf.Index, ok: true}
			}
		}
		fi, _ = stainlessTypes.LoadOrStore(t, f)
	}
	f := fi.(stainlessFields)
	if !f.ok {
		return 0, nil, false
	}
	code := int(v.FieldByIndex(f.status).Int())
	var h http.Header
	if r, _ := v.FieldByIndex(f.response).Interface().(*http.Response); r != nil {
		h = r.Header
		if code == 0 {
			code = r.StatusCode
		}
	}
	if code == 0 {
		return 0, nil, false
	}
	return code, h, true
}
