package breakertest

import (
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"

	"github.com/agentbreaker/agentbreaker/classify"
)

// HTTPToolConfig configures a tool that calls a [Server] (or any URL) the way a real
// tool calls its dependency.
type HTTPToolConfig struct {
	// Name is the tool's name. Required.
	Name string
	// Description is the tool's description. Defaults to "Looks up <Name>.".
	Description string
	// URL is requested with GET and the argument "query" as the q parameter. Required.
	URL string
	// Client sends the requests. Defaults to a client of its own with keep-alives off,
	// so a dropped connection is never retried on a reused one.
	Client *http.Client
	// MaxBody caps how much of the body is read. Defaults to 64 KiB.
	MaxBody int64
	// TypedErrors reports a status of 400 or more as a Go error built with
	// classify.StatusError (with the Retry-After in seconds, and never the response
	// body) instead of in-band, the way a tool author tells the breaker what the
	// dependency did without leaving it to guesswork. Defaults to false: in-band.
	TypedErrors bool
}

// HTTPArgs are the arguments of an HTTP tool.
type HTTPArgs struct {
	Query string `json:"query,omitempty"`
}

// NewHTTPTool returns a function tool that GETs cfg.URL under the call's context. A
// transport failure is returned as a Go error (the error classification sees a refused
// connection, a reset or a timeout); a status of 400 or more is reported in-band as
// {"status": "error", "status_code": N, "retry_after_seconds": S}, as many real tools
// do (or, with TypedErrors, as a classify.StatusError); a success is
// {"status": "ok", "body": "..."}.
func NewHTTPTool(cfg HTTPToolConfig) (tool.Tool, error) {
	if cfg.Name == "" {
		return nil, &ConfigError{Package: "breakertest", Field: "HTTPToolConfig.Name", Value: cfg.Name, Problem: "required"}
	}
	if _, err := url.Parse(cfg.URL); err != nil || cfg.URL == "" {
		return nil, &ConfigError{Package: "breakertest", Field: "HTTPToolConfig.URL", Value: cfg.URL, Problem: "want an absolute URL"}
	}
	if cfg.Description == "" {
		cfg.Description = "Looks up " + cfg.Name + "."
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = 64 << 10
	}
	return functiontool.New(functiontool.Config{Name: cfg.Name, Description: cfg.Description},
		func(ctx agent.Context, args HTTPArgs) (map[string]any, error) {
			return get(ctx, cfg, args.Query)
		})
}

func get(ctx agent.Context, cfg HTTPToolConfig, query string) (map[string]any, error) {
	u := cfg.URL
	if query != "" {
		u += "?q=" + url.QueryEscape(query)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := cfg.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, cfg.MaxBody))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 400 {
		retryAfter, hasRetryAfter := 0, false
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
			retryAfter, hasRetryAfter = s, true
		}
		if cfg.TypedErrors {
			return nil, classify.StatusError(resp.StatusCode, time.Duration(retryAfter)*time.Second, "")
		}
		out := map[string]any{"status": "error", "status_code": resp.StatusCode}
		if hasRetryAfter {
			out["retry_after_seconds"] = retryAfter
		}
		return out, nil
	}
	return map[string]any{"status": "ok", "body": string(body)}, nil
}
