package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentbreaker/agentbreaker/journal"
	"github.com/agentbreaker/agentbreaker/redact"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/throttle"
)

// BreakerStatus is one breaker in the state document.
type BreakerStatus struct {
	Name              string    `json:"name"`
	State             string    `json:"state"`
	PolicyVersion     string    `json:"policy_version"`
	Generation        uint64    `json:"generation"`
	WindowCalls       int64     `json:"window_calls"`
	WindowFailedCalls int64     `json:"window_failed_calls"`
	WindowSlowCalls   int64     `json:"window_slow_calls"`
	OpenedAt          time.Time `json:"opened_at,omitzero"`
	RetryAfterSeconds float64   `json:"retry_after_seconds"`
	FailedProbes      int       `json:"failed_probes"`
	ProbesInFlight    int       `json:"probes_in_flight"`
	// Probed is set when a health probe is attached (package probe): half-open is
	// decided by it, and user calls are answered locally until it closes the breaker.
	Probed bool `json:"probed,omitempty"`
	// Shadow is set while the dependency's policy is in shadow mode: its controls
	// decide and record, but every call is sent.
	Shadow bool     `json:"shadow,omitempty"`
	Tools  []string `json:"tools"`
	// DownSince is when the breaker stopped admitting calls (open, half-open or forced
	// open), and OpenForSeconds how long ago that was; zero while it admits calls.
	// Failed probes do not restart it. Without a History it is the last opening.
	DownSince      time.Time `json:"down_since,omitzero"`
	OpenForSeconds float64   `json:"open_for_seconds"`
	// Transitions are the breaker's recent state changes, newest first (with a
	// History; empty without one).
	Transitions []Transition `json:"transitions"`
	// Scope is ScopeFleet while the breaker follows the fleet (its state is every
	// replica's, and force open, force closed and reset apply to every replica) and
	// ScopeLocal while it decides alone on this replica. It is omitted without
	// Config.Scopes and for a breaker the fleet has not attached.
	Scope string `json:"scope,omitempty"`
	// ScopeError is why a local breaker decides alone: the class of its last failed
	// sync, "auth" (the credentials were refused), "protocol" (the server is not a
	// Redis that runs scripts), "unreachable" or "timeout". It is omitted while the
	// breaker follows the fleet, before its first sync, and when Config.Scopes does
	// not implement ScopeErrors.
	ScopeError string `json:"scope_error,omitempty"`
	// Throttle is the dependency's throttle (package throttle), when it has one and the
	// breaker source says so (*dependencymap.Map does).
	Throttle *ThrottleStatus `json:"throttle,omitempty"`
	// Adaptive is the dependency's adaptive concurrency limit, when it has one and the
	// breaker source says so (*dependencymap.Map does).
	Adaptive *AdaptiveStatus `json:"adaptive,omitempty"`
}

// ThrottleStatus is a dependency's throttle in the state document.
type ThrottleStatus struct {
	// ShedShare is the share of calls it sheds now (p); 0 while it sheds nothing.
	ShedShare float64 `json:"shed_share"`
	// Requests and Accepts are its window's counts (this replica's).
	Requests uint64 `json:"requests"`
	Accepts  uint64 `json:"accepts"`
	// Shed counts the calls it refused over its life, by priority name.
	Shed map[string]uint64 `json:"shed"`
}

// throttleStatus reads the throttle of dependency name, if the source has one.
func (h *Handler) throttleStatus(name string) *ThrottleStatus {
	src, ok := h.breakers.(interface {
		Throttle(string) (*throttle.Throttle, bool)
	})
	if !ok {
		return nil
	}
	th, ok := src.Throttle(name)
	if !ok {
		return nil
	}
	c := th.Counts()
	ts := &ThrottleStatus{ShedShare: th.Probability(), Requests: c.Requests, Accepts: c.Accepts, Shed: map[string]uint64{}}
	for _, pr := range throttle.Priorities() {
		ts.Shed[pr.String()] = th.Shed(pr)
	}
	return ts
}

// State is the document GET /api/state returns.
type State struct {
	Time              time.Time        `json:"time"`
	Breakers          []BreakerStatus  `json:"breakers"`
	Bulkheads         []BulkheadStatus `json:"bulkheads"`
	Routes            []RouteStatus    `json:"routes"`
	JournalConfigured bool             `json:"journal_configured"`
	// The parts the page shows only when they are configured.
	BulkheadsConfigured bool `json:"bulkheads_configured"`
	RoutesConfigured    bool `json:"routes_configured"`
	HistoryConfigured   bool `json:"history_configured"`
	// RefreshSeconds is how often the page reloads this document (Config.Refresh).
	RefreshSeconds float64 `json:"refresh_seconds"`
	// Policy is the policy version in force, the fleet's versions and the latest
	// changes made through POST /api/policy.
	Policy PolicyStatus `json:"policy"`
}

// ActionResult is what a successful POST returns.
type ActionResult struct {
	Action string `json:"action"`
	// Breaker is the breaker after the action (breaker actions only).
	Breaker *BreakerStatus `json:"breaker,omitempty"`
	// Intent is the ID acted on (journal actions only).
	Intent string `json:"intent,omitempty"`
}

func (h *Handler) status(b *breaker.Breaker, now time.Time) BreakerStatus {
	s := b.Snapshot()
	st := BreakerStatus{
		Name:              s.Name,
		State:             s.State.String(),
		PolicyVersion:     s.PolicyVersion,
		Generation:        s.Generation,
		WindowCalls:       s.Window.Calls,
		WindowFailedCalls: s.Window.Failures,
		WindowSlowCalls:   s.Window.SlowCalls,
		OpenedAt:          s.OpenedAt,
		RetryAfterSeconds: s.RetryAfter.Seconds(),
		FailedProbes:      s.FailedProbes,
		ProbesInFlight:    s.ProbesInFlight,
		Probed:            b.HasProber(),
		Shadow:            b.Shadow(),
		Tools:             []string{},
		Transitions:       []Transition{},
	}
	if !s.State.Admits() {
		recent, since := h.history.Recent(s.Name)
		if since.IsZero() && (s.State == breaker.Open || s.State == breaker.HalfOpen) {
			since = s.OpenedAt // no history, or it missed the opening
		}
		if !since.IsZero() {
			st.DownSince, st.OpenForSeconds = since, max(0, now.Sub(since).Seconds())
		}
		st.Transitions = append(st.Transitions, recent...)
	} else if recent, _ := h.history.Recent(s.Name); recent != nil {
		st.Transitions = recent
	}
	st.Scope = h.scope(s.Name)
	if st.Scope == ScopeLocal {
		st.ScopeError = h.scopeError(s.Name)
	}
	st.Throttle = h.throttleStatus(s.Name)
	st.Adaptive = h.adaptiveStatus(s.Name)
	if t, ok := h.breakers.(interface{ Tools(string) []string }); ok {
		if tools := t.Tools(s.Name); tools != nil {
			st.Tools = tools
		}
	}
	return st
}

// scope reads the breaker's scope: "fleet", "local" (anything else the Scopes says but
// "fleet", as the breaker does not follow the fleet then) or "" (not attached, or no
// Scopes).
func (h *Handler) scope(name string) string {
	if h.scopes == nil {
		return ""
	}
	switch h.scopes.Scope(name) {
	case "":
		return ""
	case ScopeFleet:
		return ScopeFleet
	default:
		return ScopeLocal
	}
}

// scopeErrorClasses are the classes ScopeError may show; anything else is dropped, so
// the document and the page carry a value from a fixed set.
var scopeErrorClasses = map[string]bool{"auth": true, "protocol": true, "unreachable": true, "timeout": true}

// scopeError reads why a local breaker decides alone, from a fixed set of classes.
func (h *Handler) scopeError(name string) string {
	se, ok := h.scopes.(ScopeErrors)
	if !ok {
		return ""
	}
	if c := se.ScopeError(name); scopeErrorClasses[c] {
		return c
	}
	return ""
}

func (h *Handler) state(w http.ResponseWriter, _ *http.Request) {
	now := h.clk.Now()
	doc := State{
		Time:                now,
		Breakers:            []BreakerStatus{},
		Bulkheads:           []BulkheadStatus{},
		Routes:              []RouteStatus{},
		JournalConfigured:   h.journal != nil,
		BulkheadsConfigured: h.bulkheads != nil,
		RoutesConfigured:    h.routes != nil,
		HistoryConfigured:   h.history != nil,
		RefreshSeconds:      h.refresh.Seconds(),
		Policy:              h.policyStatus(),
	}
	for _, b := range h.breakers.Breakers() {
		doc.Breakers = append(doc.Breakers, h.status(b, now))
	}
	if h.bulkheads != nil {
		doc.Bulkheads = append(doc.Bulkheads, h.bulkheads.BulkheadStatus()...)
	}
	if h.routes != nil {
		doc.Routes = append(doc.Routes, h.routes.RouteStatus()...)
	}
	writeJSON(w, http.StatusOK, doc)
}

// actionBody is the optional body of a POST.
type actionBody struct {
	Reason string `json:"reason"`
}

// readReason enforces the POST contract: a JSON content type (which an HTML form
// cannot send), a body within the cap, and a short printable reason. It writes the
// error response itself and reports whether to go on.
func (h *Handler) readReason(w http.ResponseWriter, r *http.Request) (string, bool) {
	var body actionBody
	if !h.readJSON(w, r, h.maxBody, &body) || !checkText(w, "reason", body.Reason, maxReasonLength) {
		return "", false
	}
	return body.Reason, true
}

// readJSON decodes the body of a POST into dst (an empty body leaves it as it is): a
// JSON content type, at most limit bytes, one value and no unknown fields. It writes
// the error response itself and reports whether to go on.
func (h *Handler) readJSON(w http.ResponseWriter, r *http.Request, limit int64, dst any) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		writeError(w, http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type = %q: must be application/json", r.Header.Get("Content-Type")))
		return false
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", limit))
			return false
		}
		writeError(w, http.StatusBadRequest, "reading the request body: "+err.Error())
		return false
	}
	if len(strings.TrimSpace(string(raw))) == 0 {
		return true
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		writeError(w, http.StatusBadRequest, "request body: "+err.Error())
		return false
	}
	if dec.More() {
		writeError(w, http.StatusBadRequest, "request body: more than one JSON value")
		return false
	}
	return true
}

// checkText refuses a field of a request body longer than limit bytes or holding
// control characters, writing the error response itself.
func checkText(w http.ResponseWriter, field, v string, limit int) bool {
	switch {
	case len(v) > limit:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%s: %d bytes, at most %d", field, len(v), limit))
		return false
	case !utf8.ValidString(v) || strings.ContainsFunc(v, unicode.IsControl):
		writeError(w, http.StatusBadRequest, fmt.Sprintf("%s = %q: must be printable text without control characters", field, v))
		return false
	}
	return true
}

func (h *Handler) breakerAction(w http.ResponseWriter, r *http.Request) {
	name, action := r.PathValue("name"), r.PathValue("action")
	var do func(*breaker.Breaker, string)
	switch action {
	case "force-open":
		do = (*breaker.Breaker).ForceOpen
	case "force-closed":
		do = (*breaker.Breaker).ForceClosed
	case "reset":
		do = (*breaker.Breaker).Reset
	default:
		writeError(w, http.StatusNotFound, fmt.Sprintf("action %q: must be force-open, force-closed or reset", action))
		return
	}
	b, ok := h.breakers.Get(name)
	if !ok || b == nil {
		writeError(w, http.StatusNotFound, fmt.Sprintf("breaker %q: no such dependency", name))
		return
	}
	reason, ok := h.readReason(w, r)
	if !ok {
		return
	}
	from := b.State()
	do(b, withOrigin(reason, r))
	after := h.status(b, h.clk.Now())
	attrs := []any{"action", action, "dependency", name, "reason", reason, "remote_addr", r.RemoteAddr,
		"from", from.String(), "to", after.State, "cause", breaker.CauseOperator.String(),
		"policy_version", after.PolicyVersion}
	if after.Scope != "" {
		attrs = append(attrs, "scope", after.Scope)
	}
	h.log.Warn("agentbreaker admin: operator action", attrs...)
	writeJSON(w, http.StatusOK, ActionResult{Action: action, Breaker: &after})
}

// withOrigin makes the breaker's event say the action came from the admin endpoint.
func withOrigin(reason string, r *http.Request) string {
	if reason == "" {
		return "admin endpoint, " + r.RemoteAddr
	}
	return reason + " (admin endpoint, " + r.RemoteAddr + ")"
}

func (h *Handler) journalList(w http.ResponseWriter, r *http.Request) {
	if h.journal == nil {
		writeError(w, http.StatusNotFound, "no journal is configured")
		return
	}
	intents, err := h.journal.Pending(r.Context())
	if err != nil {
		// A database's error can quote what it stores: the log gets a fingerprint,
		// the response fixed text.
		h.log.Error("agentbreaker admin: listing journal intents failed", redact.ErrorAttr("error", err))
		writeError(w, http.StatusBadGateway, "listing journal intents failed; see the server's log ("+redact.Summary(err.Error())+")")
		return
	}
	if intents == nil {
		intents = []Intent{}
	}
	writeJSON(w, http.StatusOK, struct {
		Pending []Intent `json:"pending"`
	}{intents})
}

func (h *Handler) journalAction(w http.ResponseWriter, r *http.Request) {
	if h.journal == nil {
		writeError(w, http.StatusNotFound, "no journal is configured")
		return
	}
	id, action := r.PathValue("id"), r.PathValue("action")
	var do func(context.Context, string) error
	switch action {
	case "approve":
		do = h.journal.Approve
	case "discard":
		do = h.journal.Discard
	default:
		writeError(w, http.StatusNotFound, fmt.Sprintf("action %q: must be approve or discard", action))
		return
	}
	reason, ok := h.readReason(w, r)
	if !ok {
		return
	}
	if err := do(r.Context(), id); err != nil {
		if notFound(err) {
			writeError(w, http.StatusNotFound, fmt.Sprintf("intent %q: not found", id))
			return
		}
		h.log.Error("agentbreaker admin: journal action failed", "action", action, "intent", id, redact.ErrorAttr("error", err))
		var state *journal.StateError
		if errors.As(err, &state) { // the journal's own words: the intent was already settled
			writeError(w, http.StatusBadGateway, fmt.Sprintf("%s intent %q: %v", action, id, state))
			return
		}
		writeError(w, http.StatusBadGateway, fmt.Sprintf("%s intent %q failed; see the server's log (%s)", action, id, redact.Summary(err.Error())))
		return
	}
	h.log.Warn("agentbreaker admin: operator action",
		"action", action, "intent", id, "reason", reason, "remote_addr", r.RemoteAddr)
	writeJSON(w, http.StatusOK, ActionResult{Action: action, Intent: id})
}

func notFound(err error) bool {
	if errors.Is(err, ErrNotFound) {
		return true
	}
	var nf interface{ NotFound() bool }
	return errors.As(err, &nf) && nf.NotFound()
}
