package admin

import (
	"net/http"
	"slices"
	"sync"
	"time"
)

// maxPolicyBytes caps the body of POST /api/policy: a dependency file and its reason.
const maxPolicyBytes = 1 << 20

// maxPolicyChanges is how many policy changes the state document keeps.
const maxPolicyChanges = 20

// PolicyChange is one change of the running policy asked through POST /api/policy:
// who asked, when, the version before and after, and why. A refused change is kept
// too, with its error (and the version unchanged).
type PolicyChange struct {
	At time.Time `json:"at"`
	// Operator is the name the request gave ("operator" in its body); the token is
	// shared, so RemoteAddr is recorded as well.
	Operator   string `json:"operator"`
	RemoteAddr string `json:"remote_addr"`
	Reason     string `json:"reason"`
	OldVersion string `json:"old_version"`
	NewVersion string `json:"new_version"`
	// Error is why the change was refused; "" when it was applied.
	Error string `json:"error,omitempty"`
}

// PolicyStatus is the running policy in the state document.
type PolicyStatus struct {
	// Version is the policy version in force on this replica (from a breaker source
	// with a PolicyVersion method, as *dependencymap.Map has).
	Version string `json:"version"`
	// Replicas maps every replica of the fleet to the version it reported, when
	// Config.Scopes has a PolicyVersions method (*fleet.Fleet does); Converged is set
	// when they all run Version.
	Replicas  map[string]string `json:"replicas,omitempty"`
	Converged bool              `json:"converged"`
	// Changes are the latest changes made through this handler, newest first.
	Changes []PolicyChange `json:"changes"`
}

// policyLog keeps the latest policy changes.
type policyLog struct {
	mu      sync.Mutex
	changes []PolicyChange // oldest first
}

func (l *policyLog) add(c PolicyChange) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.changes = append(l.changes, c)
	if len(l.changes) > maxPolicyChanges {
		l.changes = slices.Delete(l.changes, 0, len(l.changes)-maxPolicyChanges)
	}
}

func (l *policyLog) recent() []PolicyChange {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := slices.Clone(l.changes)
	slices.Reverse(out)
	return out
}

// policyVersion is the breaker source's policy version, "" when it has none.
func (h *Handler) policyVersion() string {
	if v, ok := h.breakers.(interface{ PolicyVersion() string }); ok {
		return v.PolicyVersion()
	}
	return ""
}

// policyStatus is the policy part of the state document.
func (h *Handler) policyStatus() PolicyStatus {
	ps := PolicyStatus{Version: h.policyVersion(), Converged: true, Changes: h.policies.recent()}
	if f, ok := h.scopes.(interface{ PolicyVersions() map[string]string }); ok {
		ps.Replicas = f.PolicyVersions()
		for _, v := range ps.Replicas {
			ps.Converged = ps.Converged && v == ps.Version
		}
	}
	if ps.Changes == nil {
		ps.Changes = []PolicyChange{}
	}
	return ps
}

// policyBody is the body of POST /api/policy.
type policyBody struct {
	// File is the new dependency file's text, YAML or JSON. Required.
	File string `json:"file"`
	// Name is the file's name, for errors and to tell JSON from YAML by extension.
	// Defaults to "admin".
	Name     string `json:"name"`
	Operator string `json:"operator"`
	Reason   string `json:"reason"`
}

// applyPolicy serves POST /api/policy: the new dependency file is applied whole or
// refused whole, and either way the change is audited in the log and the state
// document.
func (h *Handler) applyPolicy(w http.ResponseWriter, r *http.Request) {
	if h.apply == nil {
		writeError(w, http.StatusNotFound, "no policy source is configured (Config.ApplyPolicy)")
		return
	}
	var body policyBody
	if !h.readJSON(w, r, maxPolicyBytes, &body) || !checkText(w, "reason", body.Reason, maxReasonLength) ||
		!checkText(w, "operator", body.Operator, 100) || !checkText(w, "name", body.Name, 200) {
		return
	}
	if body.File == "" {
		writeError(w, http.StatusBadRequest, "file: required: the new dependency file's text")
		return
	}
	if body.Name == "" {
		body.Name = "admin"
	}
	c := PolicyChange{At: h.clk.Now(), Operator: body.Operator, RemoteAddr: r.RemoteAddr, Reason: body.Reason, OldVersion: h.policyVersion()}
	err := h.apply(body.Name, []byte(body.File))
	c.NewVersion = h.policyVersion()
	attrs := []any{"action", "apply-policy", "operator", c.Operator, "remote_addr", c.RemoteAddr, "reason", c.Reason,
		"old_policy_version", c.OldVersion, "policy_version", c.NewVersion}
	if err != nil {
		c.Error = err.Error()
		h.policies.add(c)
		h.log.Warn("agentbreaker admin: policy change refused", append(attrs, "error", c.Error)...)
		writeError(w, http.StatusUnprocessableEntity, c.Error)
		return
	}
	h.policies.add(c)
	h.log.Warn("agentbreaker admin: policy changed", attrs...)
	writeJSON(w, http.StatusOK, struct {
		Action string       `json:"action"`
		Change PolicyChange `json:"change"`
		Policy PolicyStatus `json:"policy"`
	}{"apply-policy", c, h.policyStatus()})
}
