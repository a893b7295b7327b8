package redact

import "errors"

// Error is an error whose text is withheld: its Error method returns the fingerprint
// of the wrapped error's text (and the opt-in excerpt), while errors.Is and errors.As
// still see the wrapped error. Hand it to hooks and records that would otherwise print
// a dependency's words.
type Error struct {
	err  error
	text string
}

// Wrap returns err with its text withheld, or nil for a nil err. An error that is
// already wrapped is returned as it is.
func (r *Redactor) Wrap(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*Error](err); ok {
		return err
	}
	return &Error{err: err, text: "error text withheld: " + r.Summary(err.Error())}
}

// Wrap is Default.Wrap.
func Wrap(err error) error { return Default.Wrap(err) }

// Error returns "error text withheld: len=N hash=X".
func (e *Error) Error() string { return e.text }

// Unwrap returns the wrapped error, for errors.Is and errors.As. Its text is the
// dependency's: do not print it.
func (e *Error) Unwrap() error { return e.err }
