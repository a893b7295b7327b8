package admin

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/internal/attach"
	"github.com/agentbreaker/agentbreaker/internal/nilness"
)

// Handler serves the admin page and API. It is safe for concurrent use; it keeps no
// state of its own beyond its configuration and the latest policy changes made
// through it, and reads the breakers, bulkheads, routes and journal afresh on every
// request.
type Handler struct {
	tokenSum  [sha256.Size]byte
	breakers  BreakerSource
	bulkheads Bulkheads
	routes    Routes
	journal   JournalAdmin
	history   *History
	scopes    Scopes
	refresh   time.Duration
	log       *slog.Logger
	clk       clock.Clock
	maxBody   int64
	origins   *http.CrossOriginProtection
	api       *http.ServeMux
	apply     func(name string, file []byte) error
	policies  policyLog
}

var _ http.Handler = (*Handler)(nil)

// configured settles cfg's optional parts: an interface field holding a nil pointer
// (a *fleet.Fleet left nil while fleet mode is off) is not configured, and a
// dependency map lends its clock and gets a History, fed by the map from now on.
func configured(cfg Config) Config {
	if nilness.Absent(cfg.Bulkheads) {
		cfg.Bulkheads = nil
	}
	if nilness.Absent(cfg.Routes) {
		cfg.Routes = nil
	}
	if nilness.Absent(cfg.Journal) {
		cfg.Journal = nil
	}
	if nilness.Absent(cfg.Scopes) {
		cfg.Scopes = nil
	}
	m, isMap := cfg.Breakers.(*dependencymap.Map)
	if isMap && cfg.Clock == nil {
		cfg.Clock = m.Clock()
	}
	if isMap && cfg.History == nil {
		h := MustNewHistory(HistoryConfig{})
		if attach.Add(m, func(e breaker.Event) { h.Record(e) }) {
			cfg.History = h
		}
	}
	return cfg
}

// New returns a Handler, or a *ConfigError naming the first invalid field.
func New(cfg Config) (*Handler, error) {
	switch {
	case cfg.Token == "":
		return nil, &ConfigError{Package: "admin", Field: "Token", Value: cfg.Token, Problem: "is required: the admin endpoint has no default token", Err: ErrConfig}
	case len(cfg.Token) < minTokenLength:
		return nil, &ConfigError{Package: "admin", Field: "Token", Value: fmt.Sprintf("<%d bytes>", len(cfg.Token)), Problem: fmt.Sprintf("must be at least %d bytes", minTokenLength), Err: ErrConfig}
	case strings.TrimSpace(cfg.Token) != cfg.Token || strings.ContainsAny(cfg.Token, " \t\r\n"):
		return nil, &ConfigError{Package: "admin", Field: "Token", Value: "<redacted>", Problem: "must not contain white space (it travels in an HTTP header)", Err: ErrConfig}
	case !utf8.ValidString(cfg.Token) || strings.ContainsFunc(cfg.Token, unicode.IsControl):
		return nil, &ConfigError{Package: "admin", Field: "Token", Value: "<redacted>", Problem: "must be printable text (it travels in an HTTP header)", Err: ErrConfig}
	case tokenDistinct(cfg.Token) < minTokenDistinct || tokenBits(cfg.Token) < minTokenBits:
		return nil, &ConfigError{Package: "admin", Field: "Token",
			Value:   fmt.Sprintf("<%d bytes, %d distinct characters, about %.0f bits>", len(cfg.Token), tokenDistinct(cfg.Token), tokenBits(cfg.Token)),
			Problem: fmt.Sprintf("is too easy to guess: it needs at least %d distinct characters and %d bits of estimated entropy (generate one with openssl rand -base64 32)", minTokenDistinct, minTokenBits), Err: ErrConfig}
	case cfg.Refresh != 0 && (cfg.Refresh < time.Second || cfg.Refresh > 10*time.Minute):
		return nil, &ConfigError{Package: "admin", Field: "Refresh", Value: cfg.Refresh, Problem: "must be between 1s and 10m", Err: ErrConfig}
	case nilness.Absent(cfg.Breakers):
		return nil, &ConfigError{Package: "admin", Field: "Breakers", Value: "nil", Problem: "is required", Err: ErrConfig}
	case cfg.MaxBodyBytes < 0:
		return nil, &ConfigError{Package: "admin", Field: "MaxBodyBytes", Value: cfg.MaxBodyBytes, Problem: "must be positive", Err: ErrConfig}
	}
	cfg = configured(cfg)
	h := &Handler{
		tokenSum:  sha256.Sum256([]byte(cfg.Token)),
		breakers:  cfg.Breakers,
		bulkheads: cfg.Bulkheads,
		routes:    cfg.Routes,
		journal:   cfg.Journal,
		history:   cfg.History,
		scopes:    cfg.Scopes,
		refresh:   cfg.Refresh,
		log:       cfg.Logger,
		clk:       clock.OrSystem(cfg.Clock),
		maxBody:   cfg.MaxBodyBytes,
		origins:   http.NewCrossOriginProtection(),
		apply:     cfg.ApplyPolicy,
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.maxBody == 0 {
		h.maxBody = defaultMaxBodyBytes
	}
	if h.refresh == 0 {
		h.refresh = defaultRefresh
	}
	for i, o := range cfg.TrustedOrigins {
		if err := h.origins.AddTrustedOrigin(o); err != nil {
			return nil, &ConfigError{Package: "admin", Field: fmt.Sprintf("TrustedOrigins[%d]", i), Value: o, Problem: err.Error(), Err: ErrConfig}
		}
	}
	h.api = http.NewServeMux()
	for _, route := range []struct {
		method, path string
		handle       http.HandlerFunc
	}{
		{http.MethodGet, "/api/state", h.state},
		{http.MethodPost, "/api/breakers/{name}/{action}", h.breakerAction},
		{http.MethodGet, "/api/journal", h.journalList},
		{http.MethodPost, "/api/journal/{id}/{action}", h.journalAction},
		{http.MethodPost, "/api/policy", h.applyPolicy},
	} {
		h.api.HandleFunc(route.method+" "+route.path, route.handle)
		// The same path with any other method: 405 in JSON, like every other answer.
		h.api.HandleFunc(route.path, methodNotAllowed(route.method))
	}
	h.api.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no such endpoint: "+r.URL.Path)
	})
	return h, nil
}

// MustNew is New for configurations known to be valid; it panics on error.
func MustNew(cfg Config) *Handler {
	h, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return h
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	for k, v := range securityHeaders {
		hd.Set(k, v)
	}

	if r.URL.Path == "/" || r.URL.Path == "" {
		h.page(w, r)
		return
	}
	if !h.authorized(r) {
		h.log.Warn("agentbreaker admin: request refused: missing or wrong bearer token",
			"method", r.Method, "path", r.URL.Path, "remote_addr", r.RemoteAddr)
		hd.Set("WWW-Authenticate", `Bearer realm="agentbreaker admin"`)
		writeError(w, http.StatusUnauthorized, "a valid bearer token is required")
		return
	}
	if err := h.origins.Check(r); err != nil {
		h.log.Warn("agentbreaker admin: cross-origin request refused",
			"method", r.Method, "path", r.URL.Path, "remote_addr", r.RemoteAddr,
			"origin", r.Header.Get("Origin"), "sec_fetch_site", r.Header.Get("Sec-Fetch-Site"))
		writeError(w, http.StatusForbidden, "cross-origin requests may not change state")
		return
	}
	h.api.ServeHTTP(w, r)
}

// securityHeaders go on every response, errors included. HSTS tells a browser that
// reached the page over TLS never to use plain HTTP for this host again (browsers
// ignore it over plain HTTP); the rest forbid caching, sniffing, framing, referrers,
// cross-origin embedding and powerful browser features. The page replaces the CSP
// with its own.
var securityHeaders = map[string]string{
	"Strict-Transport-Security":    "max-age=63072000; includeSubDomains",
	"Cache-Control":                "no-store",
	"X-Content-Type-Options":       "nosniff",
	"Referrer-Policy":              "no-referrer",
	"X-Frame-Options":              "DENY",
	"Content-Security-Policy":      apiCSP,
	"Cross-Origin-Opener-Policy":   "same-origin",
	"Cross-Origin-Resource-Policy": "same-origin",
	"Permissions-Policy":           "camera=(), microphone=(), geolocation=(), payment=(), usb=()",
}

// tokenDistinct counts the distinct characters of a token.
func tokenDistinct(tok string) int {
	seen := make(map[rune]struct{}, len(tok))
	for _, r := range tok {
		seen[r] = struct{}{}
	}
	return len(seen)
}

// tokenBits estimates a token's entropy in bits: its length times the Shannon entropy
// of its character frequencies. It is an upper bound on what a guesser must cover
// for tokens drawn from their own characters, low for repetition and short patterns.
func tokenBits(tok string) float64 {
	counts := make(map[rune]int, len(tok))
	n := 0
	for _, r := range tok {
		counts[r]++
		n++
	}
	var perChar float64
	for _, c := range counts {
		p := float64(c) / float64(n)
		perChar -= p * math.Log2(p)
	}
	return perChar * float64(n)
}

// authorized compares the bearer token in constant time. Both sides are hashed first,
// so neither the comparison's duration nor an early length check reveals the token's
// length.
func (h *Handler) authorized(r *http.Request) bool {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(token)))
	return subtle.ConstantTimeCompare(sum[:], h.tokenSum[:]) == 1
}

// page serves the HTML shell for GET and HEAD; it needs no token because it holds no
// state, only the code that asks for it with the token the operator types.
func (h *Handler) page(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "the page is read with GET")
		return
	}
	w.Header().Set("Content-Security-Policy", pageCSP)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(pageHTML)
}

func methodNotAllowed(allowed string) http.HandlerFunc {
	if allowed == http.MethodGet {
		allowed = "GET, HEAD"
	}
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allowed)
		writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s: use %s", r.Method, allowed))
	}
}

type errorBody struct {
	Error string `json:"error"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the status is sent; a failed write means the client left
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, errorBody{Error: msg})
}
