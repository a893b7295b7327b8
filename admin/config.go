package admin

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/clock"
)

// ErrConfig is the sentinel every configuration error unwraps to.
var ErrConfig = errors.New("admin: invalid configuration")

// ErrNotFound may be returned (wrapped) by a [JournalAdmin] for an unknown intent ID;
// the handler answers 404. An error with a NotFound() bool method that returns true
// works as well, so a journal need not import this package.
var ErrNotFound = errors.New("admin: not found")

// ConfigError reports one invalid configuration value. It is the module-wide
// [agentbreaker.ConfigError], so one errors.As finds it whichever package refused the value.
type ConfigError = agentbreaker.ConfigError

// minTokenLength is the shortest token New accepts: a token short enough to guess is
// no protection.
const minTokenLength = 16

// minTokenDistinct is how many distinct characters a token must hold: sixteen copies of
// one character are long enough and guessable at once.
const minTokenDistinct = 8

// minTokenBits is the least estimated entropy of a token, in bits: its length times
// the Shannon entropy of its own character frequencies. It catches a long token made
// of a short repeated pattern. 32 random bytes in base64 carry about 190 of these bits;
// "0123456789abcdef" exactly 64.
const minTokenBits = 64

// defaultRefresh is the default of Config.Refresh.
const defaultRefresh = 5 * time.Second

// defaultMaxBodyBytes is the default of Config.MaxBodyBytes.
const defaultMaxBodyBytes = 4 << 10

// maxReasonLength caps the reason an operator gives, in bytes.
const maxReasonLength = 500

// BreakerSource lists the breakers to show and finds one by name.
// *dependencymap.Map implements it (and its Tools method, which the page shows when
// present). Like Bulkheads and Routes, it must be safe for concurrent use: requests
// are served concurrently.
type BreakerSource interface {
	Breakers() []*breaker.Breaker
	Get(key string) (*breaker.Breaker, bool)
}

// BulkheadStatus is the state of one bulkhead.
type BulkheadStatus struct {
	Dependency string `json:"dependency"`
	InFlight   int    `json:"in_flight"`
	Limit      int    `json:"limit"`
	Waiting    int    `json:"waiting"`
}

// Bulkheads reports the state of every bulkhead. [BulkheadGroup] adapts the bulkhead
// package's groups to it.
type Bulkheads interface {
	BulkheadStatus() []BulkheadStatus
}

// RouteStatus is the state of one model route.
type RouteStatus struct {
	Model  string `json:"model"`
	Region string `json:"region"`
	// Primary marks the route calls go to when every route is healthy.
	Primary bool `json:"primary"`
	// Serving marks the route calls go to now.
	Serving bool `json:"serving"`
}

// Routes reports the model routes. The model failover package implements it.
type Routes interface {
	RouteStatus() []RouteStatus
}

// Intent is a journal entry whose outcome is unknown: the call may or may not have had
// its effect, and a person must decide.
type Intent struct {
	ID         string    `json:"id"`
	Dependency string    `json:"dependency"`
	Tool       string    `json:"tool"`
	RequestID  string    `json:"request_id"`
	Attempt    int       `json:"attempt"`
	CreatedAt  time.Time `json:"created_at"`
	// Summary says what the call was meant to do, in words safe to show an operator
	// (no secrets, no raw arguments).
	Summary string `json:"summary"`
}

// JournalAdmin is what the handler needs from the dispatch-intent journal. Approve
// tells the journal the operator accepts the intent (its effect did not happen, or
// repeating it is safe, so it may be dispatched again); Discard tells it to drop the
// intent without dispatching it again. Both return an error wrapping [ErrNotFound]
// (or with NotFound() true) for an unknown ID. Implementations must be safe for
// concurrent use; the context ends when the HTTP request does.
type JournalAdmin interface {
	Pending(ctx context.Context) ([]Intent, error)
	Approve(ctx context.Context, id string) error
	Discard(ctx context.Context, id string) error
}

// Scopes says whether a breaker's state is shared by every replica or local to this
// one. *fleet.Fleet implements it (package fleet, fleet mode): Scope returns "fleet"
// while the named breaker follows the fleet, "local" while it decides alone (Redis
// unreachable, or not synced yet) and "" when the breaker is not attached. It must be
// safe for concurrent use and must not block on the network.
type Scopes interface {
	Scope(dependency string) string
}

// ScopeErrors is implemented by a Scopes that says why a breaker decides alone
// (*fleet.Fleet does): ScopeError returns the class of the error of the breaker's last
// failed sync while it is local ("auth", "protocol", "unreachable" or "timeout"), or
// "". The state document and the page then show it next to "local", so an operator
// knows whether to check the credentials, the address or the network. It must be safe
// for concurrent use and must not block on the network.
type ScopeErrors interface {
	ScopeError(dependency string) string
}

// Scope values of BreakerStatus.Scope.
const (
	// ScopeFleet: the breaker follows the fleet; its state is every replica's, and an
	// operator's action applies to every replica.
	ScopeFleet = "fleet"
	// ScopeLocal: the breaker decides alone on this replica; an operator's action
	// applies here at once and reaches the fleet when Redis answers again (unless the
	// fleet moved on meanwhile).
	ScopeLocal = "local"
)

// Config configures a [Handler].
type Config struct {
	// Token is the bearer token every request must present. Required, at least
	// 16 bytes, 8 distinct characters and 64 bits of
	// estimated entropy; there is no default. Generate it (openssl rand -base64 32)
	// and keep it in a secret store.
	Token string
	// Breakers are shown and operated. Required.
	Breakers BreakerSource
	// Bulkheads are shown when set. Defaults to none.
	Bulkheads Bulkheads
	// Routes are shown when set. Defaults to none.
	Routes Routes
	// Journal enables the journal endpoints when set. Defaults to none: they answer 404.
	Journal JournalAdmin
	// History gives the page each breaker's recent transitions (with causes and
	// times) and how long it has been refusing calls. Feed it the breakers' events
	// (History.Record in dependencymap.Config.OnStateChange). Defaults to a History
	// with the HistoryConfig defaults when Breakers is a *dependencymap.Map: New
	// feeds it the map's transitions from then on, with no listener of yours. For
	// another BreakerSource it defaults to none: the page then shows the time open
	// from the breaker's last opening and no transitions.
	History *History
	// Scopes, when set, tells the state document and the page whether each breaker's
	// state is fleet-wide or local (a *fleet.Fleet; see Scopes). Defaults to none: no
	// scope is shown. A nil *fleet.Fleet (fleet mode off) counts as none, and so
	// does a nil pointer in Bulkheads, Routes and Journal.
	Scopes Scopes
	// ApplyPolicy, when set, lets POST /api/policy replace the running policy with a
	// new dependency file (YAML or JSON text; name is the file's name), all or
	// nothing; each change, applied or refused, is logged and listed on the page with
	// who asked, when and the versions before and after. Give it
	// func(name string, file []byte) error { return depfile.ApplyBytes(m, name, file) }.
	// Defaults to nil: the endpoint answers 404.
	ApplyPolicy func(name string, file []byte) error
	// Refresh is how often the page reloads the state by itself (the operator can
	// pause it). From 1s to 10m. Defaults to 5s.
	Refresh time.Duration
	// Logger receives a record for every action and every refused request. Defaults to
	// a logger that discards them.
	Logger *slog.Logger
	// Clock stamps the state document and times how long breakers have been open.
	// Defaults to the map's clock when Breakers is a *dependencymap.Map, else the
	// system clock.
	Clock clock.Clock
	// MaxBodyBytes caps a request body; a larger one is refused with 413. Defaults to
	// 4 KiB.
	MaxBodyBytes int64
	// TrustedOrigins are origins ("https://ops.example.com") besides the handler's own
	// from which browsers may POST, for a page served elsewhere. Defaults to none.
	TrustedOrigins []string
}
