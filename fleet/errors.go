package fleet

import (
	"context"
	"errors"
	"iter"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Classes of the errors that make a sync fail: the value of the "error" attribute of
// the fleet's log records, of Status.Error, of the error label of telemetry's
// agentbreaker_fleet_sync_errors_total and of the admin page's scope. They tell an
// operator where to look: the network, the credentials or the address.
const (
	// ClassTimeout: Redis did not answer within OpTimeout (a slow or black-holed
	// server or network).
	ClassTimeout = "timeout"
	// ClassUnreachable: no connection (closed port, wrong host, reset), or a server
	// that cannot serve the breaker now (a cluster slot without a master, a replica
	// still loading, a primary demoted to replica).
	ClassUnreachable = "unreachable"
	// ClassAuth: Redis refused the credentials (wrong password, unknown or disabled
	// ACL user, a user without permission for the commands the fleet sends).
	ClassAuth = "auth"
	// ClassProtocol: the server answered, but not as Redis does (an HTTP server or
	// another service at the address, a proxy without scripting), or refused the
	// fleet's script.
	ClassProtocol = "protocol"
)

// errorClasses are the classes, in the order of Fleet.stats.byClass.
var errorClasses = [...]string{ClassTimeout, ClassUnreachable, ClassAuth, ClassProtocol}

// errMalformed is a script reply of the wrong shape: the server is not running the
// fleet's script as Redis would.
var errMalformed = errors.New("fleet: malformed script reply")

// errorClass names an error from Redis or the network by its class, without its text
// (which may carry an address or a user name).
func errorClass(err error) string {
	var ne interface{ Timeout() bool }
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, redis.ErrPoolTimeout),
		errors.As(err, &ne) && ne.Timeout():
		return ClassTimeout
	case isAuthError(err):
		return ClassAuth
	case errors.Is(err, errMalformed):
		return ClassProtocol
	case redis.HasErrorPrefix(err, "NOSCRIPT"):
		// Left only when the round's deadline passed before the script's text could
		// follow (sync sends it at once otherwise): a round out of time.
		return ClassTimeout
	}
	if redis.IsClusterDownError(err) || redis.IsTryAgainError(err) || redis.IsMasterDownError(err) ||
		redis.IsLoadingError(err) || redis.IsReadOnlyError(err) || redis.IsMaxClientsError(err) {
		return ClassUnreachable // Redis, but it cannot serve this key now
	}
	if _, ok := redis.IsMovedError(err); ok {
		return ClassUnreachable // redirected more often than the client follows
	}
	if _, ok := redis.IsAskError(err); ok {
		return ClassUnreachable
	}
	var re redis.Error
	if errors.As(err, &re) {
		return ClassProtocol // another error reply to EVALSHA/EVAL: not a Redis that runs the script
	}
	// go-redis reports a reply it cannot parse with errors of its own, untyped.
	msg := err.Error()
	for _, p := range []string{"redis: can't parse", "redis: invalid reply"} {
		if strings.HasPrefix(msg, p) {
			return ClassProtocol
		}
	}
	return ClassUnreachable
}

// isAuthError: credentials refused (go-redis types NOAUTH, WRONGPASS and an
// unauthenticated client's refusals as auth errors), or a user without permission.
func isAuthError(err error) bool {
	return redis.IsAuthError(err) || redis.IsPermissionError(err)
}

// count records one failed sync (a round, or one breaker's script) of err's class and
// returns the class.
func (f *Fleet) count(err error) string {
	class := errorClass(err)
	f.stats.failures.Add(1)
	for i, c := range errorClasses {
		if c == class {
			f.stats.byClass[i].Add(1)
		}
	}
	return class
}

// SyncErrors yields, for each class (ClassTimeout, ClassUnreachable, ClassAuth,
// ClassProtocol, always in this order and all four), how many failed syncs had an
// error of that class since New; they sum to Stats().Failures. *Fleet thereby
// satisfies telemetry.FleetErrorSource. It is safe for concurrent use and does not
// touch Redis.
func (f *Fleet) SyncErrors() iter.Seq2[string, int64] {
	return func(yield func(string, int64) bool) {
		for i, c := range errorClasses {
			if !yield(c, f.stats.byClass[i].Load()) {
				return
			}
		}
	}
}
