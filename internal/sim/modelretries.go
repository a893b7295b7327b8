package sim

import (
	"context"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	"github.com/agentbreaker/agentbreaker/modelfailover"
)

// ModelRetries is a model outage on an OpenAI-compatible primary route with a
// Gemini fallback that answers, run in virtual time through agentbreaker's real
// Failover, breakers and classifier. The primary's client is a model of
// openai-go's retry loop (internal/requestconfig in v3.49.0): up to MaxRetries
// re-sends of a 408, 409, 429 or 5xx, each after the Retry-After-Ms or
// Retry-After delay taken verbatim, else 0.5 s × 2^n (at most 8 s) less up to
// 25% jitter, slept inside the call. Two rows compare openai-go's defaults
// (MaxRetries 2) with the failover owning retries (MaxRetries 0, as
// modelfailover/openairoute builds the client).
type ModelRetries struct {
	// Turns is the number of turns, one logical model call each. Defaults to 100.
	Turns int
	// Every is the time between the starts of two turns. Defaults to 5 s.
	Every time.Duration
	// Status is the primary's answer during the whole run. Defaults to 503.
	Status int
	// RetryAfter, when positive, is sent as Retry-After (whole seconds). Defaults to none.
	RetryAfter time.Duration
	// Deadline is the caller's deadline for one turn; a turn still sleeping in the
	// SDK then ends with no answer (and the failover, seeing the caller give up,
	// asks no fallback). Defaults to 60 s.
	Deadline time.Duration
	// Policy is the primary's breaker policy. Defaults to ModelRetriesPolicy.
	Policy breaker.Policy
	// Seed seeds the SDK's jitter. Defaults to 1.
	Seed uint64
}

// ModelRetriesPolicy trips the route after 5 calls at 50% in a minute and keeps it
// open 30 s, doubling per failed probe up to 5 minutes, without jitter.
var ModelRetriesPolicy = breaker.Policy{MinimumCalls: 5, Window: time.Minute, Cooldown: 30 * time.Second,
	CooldownMultiplier: 2, MaxCooldown: 5 * time.Minute, Jitter: -1, Version: "sim-model-retries"}

// ModelRetriesRow is one strategy's result.
type ModelRetriesRow struct {
	Name        string        `json:"name"`
	Turns       int           `json:"turns"`
	Attempts    int           `json:"attempts"`    // logical calls the primary's breaker admitted
	Requests    int           `json:"requests"`    // requests that reached the primary
	PerAttempt  float64       `json:"per_attempt"` // Requests / Attempts
	Answered    int           `json:"answered"`    // turns that got an answer
	Fallback    int           `json:"fallback"`    // of them, answered by the fallback
	Deadline    int           `json:"deadline"`    // turns that ended on the caller's deadline
	Slept       time.Duration `json:"slept_ns"`    // time spent in SDK sleeps, all turns
	MaxTurnTime time.Duration `json:"max_turn_ns"` // the longest turn
	OpenAt      time.Duration `json:"reopen_ns"`   // the primary's RetryAfter when the run ends
}

// Names of the rows.
const (
	RowSDKDefaults = "openai-go defaults (2 retries)"
	RowFailover    = "failover owns retries"
)

func (s ModelRetries) withDefaults() ModelRetries {
	if s.Turns == 0 {
		s.Turns = 100
	}
	if s.Every == 0 {
		s.Every = 5 * time.Second
	}
	if s.Status == 0 {
		s.Status = http.StatusServiceUnavailable
	}
	if s.Deadline == 0 {
		s.Deadline = time.Minute
	}
	if s.Policy == (breaker.Policy{}) {
		s.Policy = ModelRetriesPolicy
	}
	if s.Seed == 0 {
		s.Seed = 1
	}
	return s
}

// RunModelRetries runs both rows of s, or returns an error naming a bad field.
func RunModelRetries(s ModelRetries) ([]ModelRetriesRow, error) {
	s = s.withDefaults()
	switch {
	case s.Turns < 0:
		return nil, fmt.Errorf("sim: ModelRetries.Turns %d: want at least 1", s.Turns)
	case s.Every < 0:
		return nil, fmt.Errorf("sim: ModelRetries.Every %v: want a positive duration", s.Every)
	case s.Status < 400 || s.Status > 599:
		return nil, fmt.Errorf("sim: ModelRetries.Status %d: want 400 to 599", s.Status)
	case s.Deadline < 0:
		return nil, fmt.Errorf("sim: ModelRetries.Deadline %v: want a positive duration", s.Deadline)
	case s.RetryAfter < 0:
		return nil, fmt.Errorf("sim: ModelRetries.RetryAfter %v: want 0 or more", s.RetryAfter)
	}
	var rows []ModelRetriesRow
	for _, r := range []struct {
		name    string
		retries int
	}{{RowSDKDefaults, 2}, {RowFailover, 0}} {
		row, err := runModelRetries(s, r.name, r.retries)
		if err != nil {
			return nil, err
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func runModelRetries(s ModelRetries, name string, maxRetries int) (ModelRetriesRow, error) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fc := clock.NewFake(start)
	deps, err := dependencymap.New(dependencymap.Config{Clock: fc, ModelDefault: s.Policy})
	if err != nil {
		return ModelRetriesRow{}, err
	}
	row := ModelRetriesRow{Name: name, Turns: s.Turns}
	primary := &sdkModel{s: s, clk: fc, maxRetries: maxRetries, rng: rand.New(rand.NewPCG(s.Seed, 0x6f61)), row: &row}
	f, err := modelfailover.New(modelfailover.Config{
		Routes: []modelfailover.Route{
			{Model: "gpt-4.1", Region: "openai", LLM: primary},
			{Model: "gemini-2.5-flash", Region: "gemini", LLM: answering{}},
		},
		Breakers: deps, Clock: fc, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return ModelRetriesRow{}, err
	}
	for i := range s.Turns {
		at := start.Add(time.Duration(i) * s.Every)
		if fc.Now().Before(at) {
			fc.Set(at)
		}
		turnStart := fc.Now()
		ctx, cancel := context.WithCancel(context.Background())
		primary.turnEnd, primary.cancel = turnStart.Add(s.Deadline), cancel
		for resp, err := range f.GenerateContent(ctx, &model.LLMRequest{Contents: genai.Text("hello?")}, false) {
			switch {
			case err == nil && resp != nil && resp.CustomMetadata[modelfailover.MetaUnavailable] != true:
				row.Answered++
				if resp.CustomMetadata[modelfailover.MetaFailover] == true {
					row.Fallback++
				}
			case ctx.Err() != nil:
				row.Deadline++
			}
		}
		cancel()
		row.MaxTurnTime = max(row.MaxTurnTime, fc.Now().Sub(turnStart))
	}
	if row.Attempts > 0 {
		row.PerAttempt = float64(row.Requests) / float64(row.Attempts)
	}
	b, err := deps.ForModel("gpt-4.1", "openai")
	if err != nil {
		return ModelRetriesRow{}, err
	}
	row.OpenAt = b.RetryAfter()
	return row, nil
}

// sdkModel is the primary: an endpoint that always fails with s.Status and a
// client that retries as openai-go does, sleeping on the run's virtual clock.
type sdkModel struct {
	s          ModelRetries
	clk        *clock.Fake
	maxRetries int
	rng        *rand.Rand
	row        *ModelRetriesRow
	turnEnd    time.Time // the caller's deadline, on the virtual clock
	cancel     context.CancelFunc
}

func (m *sdkModel) Name() string { return "gpt-4.1" }

func (m *sdkModel) GenerateContent(ctx context.Context, _ *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		m.row.Attempts++
		for n := 0; ; n++ {
			m.row.Requests++
			if n >= m.maxRetries {
				break
			}
			d := m.delay(n)
			if m.clk.Now().Add(d).After(m.turnEnd) {
				// The caller's deadline comes first: openai-go's select sees it.
				m.row.Slept += m.turnEnd.Sub(m.clk.Now())
				m.clk.Set(m.turnEnd)
				m.cancel()
				yield(nil, ctx.Err())
				return
			}
			m.row.Slept += d
			m.clk.Advance(d)
		}
		yield(nil, &statusError{code: m.s.Status, header: m.header()})
	}
}

func (m *sdkModel) header() http.Header {
	h := http.Header{}
	if m.s.RetryAfter > 0 {
		h.Set("Retry-After", strconv.FormatInt(int64(m.s.RetryAfter/time.Second), 10))
	}
	return h
}

// delay is openai-go's retryDelay for retry n.
func (m *sdkModel) delay(n int) time.Duration {
	if m.s.RetryAfter > 0 {
		return m.s.RetryAfter
	}
	d := min(time.Duration(0.5*float64(time.Second)*math.Pow(2, float64(n))), 8*time.Second)
	return d - time.Duration(m.rng.Int64N(int64(d/4)))
}

// statusError is the client's error: it carries the answer's status and headers
// (classify.HTTPStatusError), as openai-go's *openai.Error does.
type statusError struct {
	code   int
	header http.Header
}

func (e *statusError) Error() string           { return "sim: HTTP " + strconv.Itoa(e.code) }
func (e *statusError) HTTPStatusCode() int     { return e.code }
func (e *statusError) HTTPHeader() http.Header { return e.header }

// answering is the fallback: it answers at once.
type answering struct{}

func (answering) Name() string { return "gemini-2.5-flash" }
func (answering) GenerateContent(context.Context, *model.LLMRequest, bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		yield(&model.LLMResponse{Content: genai.NewContentFromText("answer", genai.RoleModel), FinishReason: genai.FinishReasonStop}, nil)
	}
}

// WriteModelRetries prints rows as the table docs/model-failover.md shows.
func WriteModelRetries(w io.Writer, s ModelRetries, rows []ModelRetriesRow) error {
	s = s.withDefaults()
	ra := "no Retry-After"
	if s.RetryAfter > 0 {
		ra = "Retry-After " + s.RetryAfter.String()
	}
	if _, err := fmt.Fprintf(w, "%d turns %s apart, primary answers %d (%s), turn deadline %s\n",
		s.Turns, s.Every, s.Status, ra, s.Deadline); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "%-31s %8s %8s %11s %8s %8s %8s %9s %9s %8s\n", "row", "attempts", "requests",
		"per attempt", "answered", "fallback", "deadline", "slept", "max turn", "reopen"); err != nil {
		return err
	}
	for _, r := range rows {
		if _, err := fmt.Fprintf(w, "%-31s %8d %8d %11.1f %8d %8d %8d %9s %9s %8s\n", r.Name, r.Attempts, r.Requests,
			r.PerAttempt, r.Answered, r.Fallback, r.Deadline, round(r.Slept), round(r.MaxTurnTime), round(r.OpenAt)); err != nil {
			return err
		}
	}
	return nil
}

func round(d time.Duration) string { return d.Round(100 * time.Millisecond).String() }
