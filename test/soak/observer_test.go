package soak

import (
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/adk/v2/model"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/callbacks"
	"github.com/agentbreaker/agentbreaker/payloads"
)

// leakFragments are texts that only a dependency, a model server or a transport
// writes: none may reach the model or the user.
var leakFragments = []string{leakMarker, "connection reset", "dial tcp", "127.0.0.1", "EOF", "upstream connect", "quota exceeded"}

// observer collects what the invariants are checked against. Safe for concurrent use.
type observer struct {
	mu          sync.Mutex
	transitions []transition
	leaks       []string // the first few, for the report
	events      map[string]int
	payloads    map[string]int

	leakCount          atomic.Int64
	modelRequests      atomic.Int64
	unavailableAnswers atomic.Int64
	failovers          atomic.Int64
	panics             atomic.Int64
}

type transition struct {
	replica  int
	dep      string
	from, to breaker.State
	at       time.Time // wall time (the replica's clock may be stepped)
}

func newObserver() *observer {
	return &observer{events: map[string]int{}, payloads: map[string]int{}}
}

func (o *observer) quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// transition records a breaker's state change at the wall time it happened: the
// event's time on the replica's clock, less the clock's step (the listener may run
// after the probe it admitted has already reached the dependency).
func (o *observer) transition(replica int, e breaker.Event, clk *stepClock) {
	o.record(transition{replica: replica, dep: e.Breaker, from: e.From, to: e.To, at: e.At.Add(-clk.Offset())})
}

func (o *observer) record(tr transition) {
	o.mu.Lock()
	o.transitions = append(o.transitions, tr)
	o.mu.Unlock()
}

func (o *observer) event(_ int, e callbacks.Event) {
	if e.Kind == callbacks.EventCallbackPanic {
		o.panics.Add(1)
	}
	o.mu.Lock()
	o.events[e.Kind.String()]++
	o.mu.Unlock()
}

func (o *observer) leak(where, text string) {
	if o.leakCount.Add(1) > 5 {
		return
	}
	if len(text) > 600 {
		text = text[:600] + "…"
	}
	o.mu.Lock()
	o.leaks = append(o.leaks, where+": "+text)
	o.mu.Unlock()
}

// scanModelRequest checks one model request for upstream text and counts the
// payloads agentbreaker answered with.
func (o *observer) scanModelRequest(req *model.LLMRequest) {
	o.modelRequests.Add(1)
	s := contentsJSON(req)
	for _, f := range leakFragments {
		if strings.Contains(s, f) {
			i := strings.Index(s, f)
			lo, hi := max(0, i-300), min(len(s), i+200)
			o.leak("model request ("+f+")", s[lo:hi])
			break
		}
	}
	// Count the last step's payload types (each request repeats the history).
	if n := len(req.Contents); n > 0 && req.Contents[n-1] != nil {
		for _, p := range req.Contents[n-1].Parts {
			if p.FunctionResponse == nil {
				continue
			}
			rt, _ := p.FunctionResponse.Response[payloads.KeyResponseType].(string)
			if rt == "" {
				rt = "result"
			}
			o.mu.Lock()
			o.payloads[p.FunctionResponse.Name+"/"+rt]++
			o.mu.Unlock()
		}
	}
}

// scanAnswer checks what a user was shown.
func (o *observer) scanAnswer(where, text string) {
	for _, f := range leakFragments {
		if strings.Contains(text, f) {
			o.leak(where+" ("+f+")", text)
			return
		}
	}
}

func (o *observer) snapshotTransitions() []transition {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := append([]transition(nil), o.transitions...)
	sort.Slice(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	return out
}

// transitionsSince returns the transitions recorded after the first n, in the order
// recorded, and the new count.
func (o *observer) transitionsSince(n int) ([]transition, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]transition(nil), o.transitions[n:]...), len(o.transitions)
}

func (o *observer) counts() (events, pl map[string]int, leaks []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	events, pl = map[string]int{}, map[string]int{}
	for k, v := range o.events {
		events[k] = v
	}
	for k, v := range o.payloads {
		pl[k] = v
	}
	return events, pl, append([]string(nil), o.leaks...)
}
