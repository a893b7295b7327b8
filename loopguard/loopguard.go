package loopguard

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker"
	"github.com/agentbreaker/agentbreaker/payloads"
)

// ConfigError is the error New returns for an invalid value.
type ConfigError = agentbreaker.ConfigError

// DefaultStatePrefix starts the session-state keys the counts are mirrored into.
const DefaultStatePrefix = "temp:agentbreaker.short_circuits."

// ErrStatePrefix is what the *ConfigError New returns unwraps to when
// Config.StatePrefix does not start with "temp:": the mirror must never be persisted with the session.
var ErrStatePrefix = errors.New(`loopguard: Config.StatePrefix must start with "temp:"`)

// Config configures a [Guard].
type Config struct {
	// FirmAfter is the short-circuit count, per invocation and dependency, from which
	// payloads turn firm ("answer without this tool now"). At least 1. Defaults to 2:
	// the first refusal explains, the second insists.
	FirmAfter int
	// MaxModelCallsWhileOpen caps the model calls an invocation may make after its
	// first short-circuit; past it the model is not called and the turn ends with
	// CapMessage. Defaults to 4; a negative value turns the cap off.
	MaxModelCallsWhileOpen int
	// HideOpenTools removes the declarations of tools whose dependency refuses calls
	// now from the model's tool list before each model call. They are offered again at
	// the first model call after a probe may go, even in the same invocation: a
	// dependency whose tools the model never sees is never probed, and its breaker
	// would stay open until an operator stepped in. The tools stay dispatchable, so a
	// call the model makes anyway still goes through its breaker (and may be the
	// probe). Defaults to false.
	HideOpenTools bool
	// StatePrefix starts the "temp:" session-state keys the counts are mirrored into,
	// followed by the dependency key. Must start with "temp:". Defaults to
	// DefaultStatePrefix.
	StatePrefix string
	// CapMessage writes the text the turn ends with when the cap is reached, given the
	// dependencies that short-circuited (sorted). It must not return upstream text.
	// Defaults to a plain sentence naming the dependencies.
	CapMessage func(dependencies []string) string
}

// Guard holds the loop guard's policy and hands out per-invocation trackers. It is
// immutable after New and safe for concurrent use.
type Guard struct {
	cfg Config
}

// New returns a guard, or a *ConfigError naming the invalid field and value.
func New(cfg Config) (*Guard, error) {
	if cfg.FirmAfter == 0 {
		cfg.FirmAfter = 2
	}
	if cfg.FirmAfter < 1 {
		return nil, &ConfigError{Package: "loopguard", Field: "Config.FirmAfter", Value: cfg.FirmAfter, Problem: "must be at least 1"}
	}
	if cfg.MaxModelCallsWhileOpen == 0 {
		cfg.MaxModelCallsWhileOpen = 4
	}
	if cfg.StatePrefix == "" {
		cfg.StatePrefix = DefaultStatePrefix
	}
	if !strings.HasPrefix(cfg.StatePrefix, "temp:") {
		return nil, &ConfigError{Package: "loopguard", Field: "Config.StatePrefix", Value: cfg.StatePrefix,
			Problem: `must start with "temp:" (the mirror must never be persisted with the session)`, Err: ErrStatePrefix}
	}
	if cfg.CapMessage == nil {
		cfg.CapMessage = defaultCapMessage
	}
	return &Guard{cfg: cfg}, nil
}

// MustNew is New that panics on error.
func MustNew(cfg Config) *Guard {
	g, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return g
}

// Config returns the guard's configuration with defaults applied.
func (g *Guard) Config() Config { return g.cfg }

// StateKey is the session-state key that mirrors dependency's count.
func (g *Guard) StateKey(dependency string) string { return g.cfg.StatePrefix + dependency }

// Track starts the counters of one invocation. The caller keeps the tracker for the
// length of the invocation and drops it when the run ends.
func (g *Guard) Track() *Tracker {
	return &Tracker{firmAfter: g.cfg.FirmAfter, maxModel: g.cfg.MaxModelCallsWhileOpen}
}

// Decision is the loop guard's answer to one short-circuit.
type Decision struct {
	// Count is how many calls to the dependency were short-circuited in this
	// invocation, this one included.
	Count int
	// Firm is set when Count reached FirmAfter: the payload must tell the model to
	// answer without the tool now.
	Firm bool
	// FirstFirm is set on the one short-circuit that turned the dependency firm, so an
	// event is raised once per invocation and dependency.
	FirstFirm bool
}

// Tracker counts one invocation's short-circuits and model calls. Counters live here,
// not in session state, because parallel tool calls doing read-modify-write on session
// state lose updates. It is safe for concurrent use.
type Tracker struct {
	firmAfter int
	maxModel  int

	mu            sync.Mutex
	shortCircuits map[string]int
	total         int
	modelCalls    int // model calls since the first short-circuit
	hidden        map[string]bool
}

// ShortCircuit records one short-circuited call to dependency.
func (t *Tracker) ShortCircuit(dependency string) Decision {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.shortCircuits == nil {
		t.shortCircuits = map[string]int{}
	}
	t.shortCircuits[dependency]++
	t.total++
	n := t.shortCircuits[dependency]
	return Decision{Count: n, Firm: n >= t.firmAfter, FirstFirm: n == t.firmAfter}
}

// Count returns dependency's short-circuits in this invocation.
func (t *Tracker) Count(dependency string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.shortCircuits[dependency]
}

// Total returns every short-circuit of this invocation.
func (t *Tracker) Total() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total
}

// Dependencies returns the dependencies that short-circuited, sorted.
func (t *Tracker) Dependencies() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Sorted(maps.Keys(t.shortCircuits))
}

// ModelCall records one model call and reports whether it may go ahead. Calls before
// the invocation's first short-circuit are free; after it, at most
// MaxModelCallsWhileOpen are allowed. n is the count after it, 0 while free.
func (t *Tracker) ModelCall() (n int, allowed bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.total == 0 {
		return 0, true
	}
	t.modelCalls++
	return t.modelCalls, t.maxModel < 0 || t.modelCalls <= t.maxModel
}

// hide marks dependencies whose tools were left out of the model's tool list.
func (t *Tracker) hide(dependencies ...string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.hidden == nil {
		t.hidden = map[string]bool{}
	}
	for _, d := range dependencies {
		t.hidden[d] = true
	}
}

// unhide marks dependencies whose tools are offered to the model again.
func (t *Tracker) unhide(dependencies ...string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, d := range dependencies {
		delete(t.hidden, d)
	}
}

// Hidden reports whether dependency's tools were left out of the latest model
// request that Filter saw. A call the model makes to such a tool was not offered to it.
func (t *Tracker) Hidden(dependency string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.hidden[dependency]
}

// Filter removes from req's declarations the tools whose dependency refuses calls now
// (refusing returns true), and offers again those of a dependency hidden earlier in
// the invocation that no longer refuses: once a probe may go, the model must be able
// to make it. dependencyOf maps a tool to its dependency and reports whether it is
// guarded at all; unguarded tools are never removed.
//
// Only the declarations (what the model is shown) are removed; req.Tools (what adk-go
// dispatches) is left whole, so a call the model makes to a hidden tool reaches the
// tool callbacks and its breaker instead of adk-go's "tool not found". The request's
// config and declaration lists are replaced by copies; nothing shared is changed. It
// returns the removed tool names, sorted.
func (g *Guard) Filter(req *model.LLMRequest, t *Tracker, dependencyOf func(tool string) (string, bool), refusing func(dependency string) bool) []string {
	if req == nil || len(req.Tools) == 0 {
		return nil
	}
	var removed []string
	verdict := map[string]bool{} // one question per dependency and request
	for _, name := range slices.Sorted(maps.Keys(req.Tools)) {
		dep, guarded := dependencyOf(name)
		if !guarded {
			continue
		}
		hide, asked := verdict[dep]
		if !asked {
			hide = refusing(dep)
			verdict[dep] = hide
			if hide {
				t.hide(dep)
			} else {
				t.unhide(dep)
			}
		}
		if hide {
			removed = append(removed, name)
		}
	}
	if len(removed) == 0 {
		return nil
	}
	if req.Config != nil {
		cfg := *req.Config
		cfg.Tools = make([]*genai.Tool, 0, len(req.Config.Tools))
		for _, gt := range req.Config.Tools {
			if gt == nil || len(gt.FunctionDeclarations) == 0 {
				cfg.Tools = append(cfg.Tools, gt)
				continue
			}
			c := *gt
			c.FunctionDeclarations = slices.DeleteFunc(slices.Clone(gt.FunctionDeclarations), func(d *genai.FunctionDeclaration) bool {
				return d != nil && slices.Contains(removed, d.Name)
			})
			if len(c.FunctionDeclarations) == 0 && onlyFunctions(c) {
				continue // an empty function tool is rejected by some model APIs
			}
			cfg.Tools = append(cfg.Tools, &c)
		}
		req.Config = &cfg
	}
	return removed
}

// CapResponse is the final answer that replaces a model call past the cap.
func (g *Guard) CapResponse(t *Tracker) *model.LLMResponse {
	return &model.LLMResponse{
		Content:      genai.NewContentFromText(g.cfg.CapMessage(t.Dependencies()), genai.RoleModel),
		TurnComplete: true,
	}
}

// onlyFunctions reports whether t declares nothing but functions.
func onlyFunctions(t genai.Tool) bool {
	t.FunctionDeclarations = nil
	return reflect.ValueOf(t).IsZero()
}

func defaultCapMessage(deps []string) string {
	names := make([]string, len(deps))
	for i, d := range deps {
		names[i] = payloads.CleanName(d)
	}
	what := "a service I depend on is"
	switch len(names) {
	case 0:
	case 1:
		what = names[0] + " is"
	default:
		what = strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1] + " are"
	}
	return "I could not finish this request because " + what + " unavailable right now. Please try again later."
}
