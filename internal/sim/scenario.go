package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/agentbreaker/agentbreaker"

	"github.com/agentbreaker/agentbreaker/dependencymap/depfile"
)

// Outage modes: how a call that the outage fails behaves.
const (
	// ModeHang: the call never answers; the tool timeout ends it and counts it.
	ModeHang = "hang"
	// ModeError: the call fails fast with a connection reset after ErrorLatency.
	ModeError = "error"
)

// Strategy names.
const (
	// StrategyNaive: no breaker, no bulkhead, retries at every layer (client attempts ×
	// sub-agents × the model's re-issues).
	StrategyNaive = "naive"
	// StrategyConsecutive: a breaker that trips after more than five consecutive failures
	// and stays open 60 s (gobreaker's defaults), with the same retries as naive.
	StrategyConsecutive = "consecutive"
	// StrategyDefaults: agentbreaker's callbacks plugin with the breaker's default policy,
	// the bulkhead and the retry budget; the tool client does not retry on its own.
	StrategyDefaults = "agentbreaker-defaults"
	// StrategyPolicy: the same with the scenario's Policy.
	StrategyPolicy = "agentbreaker-policy"
)

// Strategies lists every strategy, in the order results are shown.
func Strategies() []string {
	return []string{StrategyNaive, StrategyConsecutive, StrategyDefaults, StrategyPolicy}
}

// Scenario describes one incident to simulate. Its zero value is the first design
// document's incident (see DefaultScenario); every field documents its default. The YAML
// and JSON names are the command's flag names with underscores for hyphens.
//
// A zero field takes its default. Where zero is also a meaningful value (the rates and
// chances, OutageStart, Reissues), a file or flag that says 0 is stored as a stand-in
// that WithDefaults keeps and that behaves as zero: math.SmallestNonzeroFloat64, one
// nanosecond, or -1.
type Scenario struct {
	// Seed drives every random choice; the same seed gives the same result. Defaults to 1.
	Seed uint64 `yaml:"seed" json:"seed"`
	// Duration is how much virtual time is simulated. Defaults to 18m: the outage and
	// seven minutes after it, long enough for a cooldown grown to its 5m cap to end and
	// the plugin's default breaker to close again.
	Duration time.Duration `yaml:"duration" json:"duration"`
	// Users is how many users converse with the agent at once. Each sends turns at
	// random (Poisson) moments, TurnRate/Users per second on average, whether or not
	// the previous answer came back: people re-ask a slow agent, and new conversations
	// keep arriving. Defaults to 30.
	Users int `yaml:"users" json:"users"`
	// TurnRate is the turns per second all users send together. Defaults to 1.
	TurnRate float64 `yaml:"turn_rate" json:"turn_rate"`

	// Dependency names the failing dependency. Defaults to "enrichment".
	Dependency string `yaml:"dependency" json:"dependency"`
	// Latency is a healthy call's median latency; each call takes it ×U(0.5, 1.5).
	// Defaults to 200ms.
	Latency time.Duration `yaml:"latency" json:"latency"`
	// ErrorRate is the share of calls that fail while the dependency is healthy.
	// Defaults to 0.01.
	ErrorRate float64 `yaml:"error_rate" json:"error_rate"`
	// OutageStart and OutageEnd bound the outage, from the start of the run. Default to
	// 2m and 11m: a nine-minute outage.
	OutageStart time.Duration `yaml:"outage_start" json:"outage_start"`
	OutageEnd   time.Duration `yaml:"outage_end" json:"outage_end"`
	// OutageErrorRate is the share of calls that fail during the outage. Defaults to 1:
	// in the design document's incident every probe fails for nine minutes. Below 1 a
	// single probe may succeed by luck, close the breaker, and let the window refill
	// before it trips again.
	OutageErrorRate float64 `yaml:"outage_error_rate" json:"outage_error_rate"`
	// OutageMode is how failing calls behave: "hang" (until the tool timeout) or "error"
	// (a connection reset after ErrorLatency). Defaults to "hang".
	OutageMode string `yaml:"outage_mode" json:"outage_mode"`
	// ErrorLatency is how long a failing call takes in error mode. Defaults to 100ms.
	ErrorLatency time.Duration `yaml:"error_latency" json:"error_latency"`
	// RetryAfter, in error mode, is the delay each failing call of the outage states: an
	// HTTP 503 with a Retry-After header, which agentbreaker's breaker honours (up to the
	// policy's max_retry_after) and the other strategies ignore. Defaults to 0: no delay
	// stated.
	RetryAfter time.Duration `yaml:"retry_after" json:"retry_after"`

	// ModelLatency is one model step: deciding to call the tool, and answering or
	// re-issuing after it. Defaults to 1s.
	ModelLatency time.Duration `yaml:"model_latency" json:"model_latency"`
	// SubAgents is how many sub-agents call the tool in one model step, in parallel.
	// Defaults to 2.
	SubAgents int `yaml:"sub_agents" json:"sub_agents"`
	// ClientAttempts is how many times the tool's own client tries a call in the naive
	// and consecutive strategies, with full-jitter backoff from ClientBackoff. agentbreaker's
	// strategies put the budget in one place and make one attempt per call. Defaults to 3.
	ClientAttempts int `yaml:"client_attempts" json:"client_attempts"`
	// ClientBackoff is the client's first backoff ceiling, doubling per attempt.
	// Defaults to 100ms.
	ClientBackoff time.Duration `yaml:"client_backoff" json:"client_backoff"`
	// Reissues is how many times the model calls a failed tool again in one turn, at
	// most. Defaults to 2 (three issues: 3 attempts × 2 sub-agents × 3 issues = 18 calls);
	// a negative value means none (the model never calls again), as zero means the
	// default. A file or flag value of 0 is stored as -1.
	Reissues int `yaml:"reissues" json:"reissues"`
	// ReissueAfterError is the chance the model calls again after a raw error.
	// Defaults to 1.
	ReissueAfterError float64 `yaml:"reissue_after_error" json:"reissue_after_error"`
	// ReissueAfterUnavailable is the chance it calls again after agentbreaker's
	// "unavailable, retry_advised: false" payload; after the firm payload it never does.
	// Defaults to 0.3.
	ReissueAfterUnavailable float64 `yaml:"reissue_after_unavailable" json:"reissue_after_unavailable"`
	// ToolTimeout caps each call; a call that reaches it counts as a failure.
	// Defaults to 5s.
	ToolTimeout time.Duration `yaml:"tool_timeout" json:"tool_timeout"`
	// TurnTimeout is the whole-turn budget: a turn still going then has failed for its
	// user. Defaults to 30s.
	TurnTimeout time.Duration `yaml:"turn_timeout" json:"turn_timeout"`
	// Bulkhead caps concurrent calls to the dependency in agentbreaker's strategies.
	// Defaults to 20.
	Bulkhead int `yaml:"bulkhead" json:"bulkhead"`

	// Policy is the user's breaker policy, in the dependency file's form; its keys are
	// flags of their own (-window, -window-calls, …). Absent fields take DefaultPolicy's
	// values (the design document's: 50% failed in a count window of the last 20 calls,
	// a fixed 30 s cooldown), except that a policy giving window or buckets and not
	// window_calls gets a time window. A key the resulting policy would ignore (window
	// beside a count window, max_cooldown with a fixed cooldown, …) is an error.
	Policy depfile.Policy `yaml:"policy" json:"policy"`
	// Strategies to run, in order. Defaults to Strategies().
	Strategies []string `yaml:"strategies" json:"strategies"`
}

// ConfigError reports one invalid scenario value: the field (its YAML name) and the
// value given. It is the module-wide [agentbreaker.ConfigError].
type ConfigError = agentbreaker.ConfigError

// DefaultScenario returns the design document's incident with every default filled in.
func DefaultScenario() Scenario { return Scenario{}.WithDefaults() }

// WithDefaults returns s with every zero field set to its default.
func (s Scenario) WithDefaults() Scenario {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if s.Seed == 0 {
		s.Seed = 1
	}
	def(&s.Duration, 18*time.Minute)
	if s.Users == 0 {
		s.Users = 30
	}
	if s.TurnRate == 0 {
		s.TurnRate = 1
	}
	if s.Dependency == "" {
		s.Dependency = "enrichment"
	}
	def(&s.Latency, 200*time.Millisecond)
	if s.ErrorRate == 0 {
		s.ErrorRate = 0.01
	}
	def(&s.OutageStart, 2*time.Minute)
	def(&s.OutageEnd, 11*time.Minute)
	if s.OutageErrorRate == 0 {
		s.OutageErrorRate = 1
	}
	if s.OutageMode == "" {
		s.OutageMode = ModeHang
	}
	def(&s.ErrorLatency, 100*time.Millisecond)
	def(&s.ModelLatency, time.Second)
	if s.SubAgents == 0 {
		s.SubAgents = 2
	}
	if s.ClientAttempts == 0 {
		s.ClientAttempts = 3
	}
	def(&s.ClientBackoff, 100*time.Millisecond)
	if s.Reissues == 0 {
		s.Reissues = 2
	}
	if s.ReissueAfterError == 0 {
		s.ReissueAfterError = 1
	}
	if s.ReissueAfterUnavailable == 0 {
		s.ReissueAfterUnavailable = 0.3
	}
	def(&s.ToolTimeout, 5*time.Second)
	def(&s.TurnTimeout, 30*time.Second)
	if s.Bulkhead == 0 {
		s.Bulkhead = 20
	}
	if len(s.Strategies) == 0 {
		s.Strategies = Strategies()
	}
	return s
}

// Validate checks a scenario after defaults are applied and returns a *ConfigError
// naming the first field out of range.
func (s Scenario) Validate() error {
	if err := s.checkRanges(); err != nil {
		return err
	}
	if err := s.checkOutage(); err != nil {
		return err
	}
	if strings.TrimSpace(s.Dependency) == "" {
		return badField("dependency", s.Dependency, "must not be blank")
	}
	if err := s.checkStrategies(); err != nil {
		return err
	}
	if s.Policy.Shadow {
		// The simulator measures what a policy does when it acts; shadow mode is for a
		// running agent, to record what its controls would refuse.
		return badField("policy.shadow", true, "the simulator runs policies that act; shadow mode is for a running agent")
	}
	p, err := s.UserPolicy()
	if err != nil {
		return err
	}
	return s.checkPolicyFields(p)
}

// badField is the *ConfigError for field, whose value v has problem.
func badField(field string, v any, problem string) error {
	return &ConfigError{Package: "sim", Field: field, Value: v, Problem: problem}
}

// checkRanges checks the durations, counts and rates that have a range of their own.
func (s Scenario) checkRanges() error {
	durs := []struct {
		name   string
		v      time.Duration
		lo, hi time.Duration
	}{
		{"duration", s.Duration, time.Second, 24 * time.Hour},
		{"latency", s.Latency, time.Millisecond, time.Hour},
		{"error_latency", s.ErrorLatency, time.Millisecond, time.Hour},
		{"model_latency", s.ModelLatency, time.Millisecond, time.Hour},
		{"client_backoff", s.ClientBackoff, time.Millisecond, time.Hour},
		{"tool_timeout", s.ToolTimeout, time.Millisecond, time.Hour},
		{"turn_timeout", s.TurnTimeout, time.Millisecond, 24 * time.Hour},
	}
	for _, d := range durs {
		if d.v < d.lo || d.v > d.hi {
			return badField(d.name, d.v, fmt.Sprintf("must be from %v to %v", d.lo, d.hi))
		}
	}
	ints := []struct {
		name   string
		v      int
		lo, hi int
	}{
		{"users", s.Users, 1, 100000},
		{"sub_agents", s.SubAgents, 1, 100},
		{"client_attempts", s.ClientAttempts, 1, 100},
		{"reissues", s.Reissues, -1, 100},
		{"bulkhead", s.Bulkhead, 1, 1000000},
	}
	for _, n := range ints {
		if n.v < n.lo || n.v > n.hi {
			return badField(n.name, n.v, fmt.Sprintf("must be from %d to %d", n.lo, n.hi))
		}
	}
	rates := []struct {
		name string
		v    float64
	}{
		{"error_rate", s.ErrorRate},
		{"outage_error_rate", s.OutageErrorRate},
		{"reissue_after_error", s.ReissueAfterError},
		{"reissue_after_unavailable", s.ReissueAfterUnavailable},
	}
	for _, r := range rates {
		if math.IsNaN(r.v) || r.v < 0 || r.v > 1 {
			return badField(r.name, r.v, "must be from 0 to 1")
		}
	}
	return nil
}

// checkOutage checks the load and the outage: the turn rate, when the outage starts
// and ends within the run, its mode and the delay its errors state.
func (s Scenario) checkOutage() error {
	if math.IsNaN(s.TurnRate) || s.TurnRate <= 0 || s.TurnRate > 10000 {
		return badField("turn_rate", s.TurnRate, "must be more than 0 and at most 10000 turns per second")
	}
	if s.OutageStart < 0 || s.OutageStart >= s.Duration {
		return badField("outage_start", s.OutageStart, fmt.Sprintf("must be from 0 to before the end of the run (duration %v)", s.Duration))
	}
	if s.OutageEnd <= s.OutageStart || s.OutageEnd > s.Duration {
		return badField("outage_end", s.OutageEnd, fmt.Sprintf("must be after outage_start (%v) and at most duration (%v)", s.OutageStart, s.Duration))
	}
	if s.OutageMode != ModeHang && s.OutageMode != ModeError {
		return badField("outage_mode", s.OutageMode, `must be "hang" or "error"`)
	}
	if s.RetryAfter < 0 || s.RetryAfter > time.Hour {
		return badField("retry_after", s.RetryAfter, "must be from 0 (none) to 1h")
	}
	if s.RetryAfter > 0 && s.OutageMode != ModeError {
		return badField("retry_after", s.RetryAfter, `a hanging call states no delay; set outage_mode: error`)
	}
	return nil
}

// checkStrategies checks that each strategy is known and listed once.
func (s Scenario) checkStrategies() error {
	seen := map[string]bool{}
	for i, name := range s.Strategies {
		if !slices.Contains(Strategies(), name) && !slices.Contains(OptInStrategies(), name) {
			return badField(fmt.Sprintf("strategies[%d]", i), name, "unknown strategy; want one of "+strings.Join(Strategies(), ", "))
		}
		if seen[name] {
			return badField(fmt.Sprintf("strategies[%d]", i), name, "listed twice")
		}
		seen[name] = true
	}
	return nil
}

// scenarioFile is the on-disk form: durations are Go duration strings.
type scenarioFile struct {
	Seed                    *uint64        `yaml:"seed"`
	Duration                string         `yaml:"duration"`
	Users                   *int           `yaml:"users"`
	TurnRate                *float64       `yaml:"turn_rate"`
	Dependency              string         `yaml:"dependency"`
	Latency                 string         `yaml:"latency"`
	ErrorRate               *float64       `yaml:"error_rate"`
	OutageStart             string         `yaml:"outage_start"`
	OutageEnd               string         `yaml:"outage_end"`
	OutageErrorRate         *float64       `yaml:"outage_error_rate"`
	OutageMode              string         `yaml:"outage_mode"`
	ErrorLatency            string         `yaml:"error_latency"`
	RetryAfter              string         `yaml:"retry_after"`
	ModelLatency            string         `yaml:"model_latency"`
	SubAgents               *int           `yaml:"sub_agents"`
	ClientAttempts          *int           `yaml:"client_attempts"`
	ClientBackoff           string         `yaml:"client_backoff"`
	Reissues                *int           `yaml:"reissues"`
	ReissueAfterError       *float64       `yaml:"reissue_after_error"`
	ReissueAfterUnavailable *float64       `yaml:"reissue_after_unavailable"`
	ToolTimeout             string         `yaml:"tool_timeout"`
	TurnTimeout             string         `yaml:"turn_timeout"`
	Bulkhead                *int           `yaml:"bulkhead"`
	Policy                  depfile.Policy `yaml:"policy"`
	Strategies              []string       `yaml:"strategies"`
}

// setInt copies a count given in a file; an explicit zero (told apart from an absent key
// by the pointer) is rejected, as no count but reissues may be zero.
func setInt(dst *int, src *int, name string) error {
	if src == nil {
		return nil
	}
	if *src == 0 && name != "reissues" {
		return badField(name, 0, "must be at least 1 (leave it out for the default)")
	}
	*dst = *src
	return nil
}

// ParseScenario reads a YAML (or JSON, which is YAML) scenario. Unknown keys are
// errors, so a typo never silently falls back to a default. The result has defaults
// applied and is validated. A problem in the file is a *PositionError with the line and
// column, around a *ConfigError naming the key by its path in the file where it is one.
func ParseScenario(data []byte) (Scenario, error) {
	var f scenarioFile
	doc, err := decodeScenarioFile(data, &f)
	if err != nil {
		return Scenario{}, err
	}
	s, err := f.scenario()
	if err != nil {
		return Scenario{}, at(doc, err)
	}
	return s, nil
}

// scenario converts the file's values, applies the defaults and validates.
func (f scenarioFile) scenario() (Scenario, error) {
	var s Scenario
	if f.Seed != nil {
		s.Seed = *f.Seed
	}
	if err := f.durations(&s); err != nil {
		return Scenario{}, err
	}
	for _, n := range []struct {
		name string
		src  *int
		dst  *int
	}{
		{"users", f.Users, &s.Users},
		{"sub_agents", f.SubAgents, &s.SubAgents},
		{"client_attempts", f.ClientAttempts, &s.ClientAttempts},
		{"reissues", f.Reissues, &s.Reissues},
		{"bulkhead", f.Bulkhead, &s.Bulkhead},
	} {
		if err := setInt(n.dst, n.src, n.name); err != nil {
			return Scenario{}, err
		}
	}
	if f.Reissues != nil && *f.Reissues == 0 {
		s.Reissues = -1 // explicit zero: none, which WithDefaults keeps
	}
	f.rates(&s)
	s.Dependency, s.OutageMode, s.Policy, s.Strategies = f.Dependency, f.OutageMode, f.Policy, f.Strategies
	s = s.WithDefaults()
	if err := s.Validate(); err != nil {
		return Scenario{}, err
	}
	return s, nil
}

// durations parses the file's durations into s. An explicit zero is an error, but
// for outage_start, where it is the first instant.
func (f scenarioFile) durations(s *Scenario) error {
	durs := []struct {
		name string
		src  string
		dst  *time.Duration
	}{
		{"duration", f.Duration, &s.Duration},
		{"latency", f.Latency, &s.Latency},
		{"outage_start", f.OutageStart, &s.OutageStart},
		{"outage_end", f.OutageEnd, &s.OutageEnd},
		{"error_latency", f.ErrorLatency, &s.ErrorLatency},
		{"retry_after", f.RetryAfter, &s.RetryAfter},
		{"model_latency", f.ModelLatency, &s.ModelLatency},
		{"client_backoff", f.ClientBackoff, &s.ClientBackoff},
		{"tool_timeout", f.ToolTimeout, &s.ToolTimeout},
		{"turn_timeout", f.TurnTimeout, &s.TurnTimeout},
	}
	for _, d := range durs {
		if d.src == "" {
			continue
		}
		v, err := time.ParseDuration(d.src)
		if err != nil {
			return badField(d.name, d.src, "not a duration (want e.g. 30s, 5m)")
		}
		if v == 0 && d.name == "outage_start" {
			v = time.Nanosecond // an outage from the first instant: keep it distinct from "default"
		}
		if v == 0 {
			return badField(d.name, d.src, "must be more than zero (leave it out for the default)")
		}
		*d.dst = v
	}
	return nil
}

// rates copies the file's rates into s; an explicit zero is the smallest chance
// there is, told apart from an absent key, which takes the default.
func (f scenarioFile) rates(s *Scenario) {
	for _, r := range []struct {
		name string
		src  *float64
		dst  *float64
	}{
		{"turn_rate", f.TurnRate, &s.TurnRate},
		{"error_rate", f.ErrorRate, &s.ErrorRate},
		{"outage_error_rate", f.OutageErrorRate, &s.OutageErrorRate},
		{"reissue_after_error", f.ReissueAfterError, &s.ReissueAfterError},
		{"reissue_after_unavailable", f.ReissueAfterUnavailable, &s.ReissueAfterUnavailable},
	} {
		if r.src == nil {
			continue
		}
		if *r.src == 0 {
			*r.dst = math.SmallestNonzeroFloat64 // explicit zero: a chance of (practically) nothing
			continue
		}
		*r.dst = *r.src
	}
}

// LoadScenario reads a scenario file (see ParseScenario).
func LoadScenario(path string) (Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Scenario{}, err // the *fs.PathError names the file
	}
	s, err := ParseScenario(data)
	if pe, ok := errors.AsType[*PositionError](err); ok {
		// path:line:column, as compilers write it, so editors jump there.
		where := fmt.Sprintf("%s:%d", path, pe.Line)
		if pe.Column > 0 {
			where += fmt.Sprintf(":%d", pe.Column)
		}
		msg := strings.TrimPrefix(pe.Error(), fmt.Sprintf("line %d: ", pe.Line))
		msg = strings.TrimPrefix(msg, fmt.Sprintf("line %d, column %d: ", pe.Line, pe.Column))
		return Scenario{}, &fileError{where: where, msg: msg, err: err}
	}
	if err != nil {
		return Scenario{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// fileError is a PositionError with the file's name in front.
type fileError struct {
	where, msg string
	err        error
}

func (e *fileError) Error() string { return e.where + ": " + e.msg }
func (e *fileError) Unwrap() error { return e.err }

// onset and recovery are the outage bounds as instants of a run that starts at start.
func (s Scenario) onset(start time.Time) time.Time    { return start.Add(s.OutageStart) }
func (s Scenario) recovery(start time.Time) time.Time { return start.Add(s.OutageEnd) }

// policyError puts a dependency-file policy error under the scenario's policy field. The
// dependencymap and breaker errors already name the field and the value.
func policyError(err error) error {
	if de, ok := errors.AsType[*depfile.Error](err); ok && len(de.Problems) > 0 {
		// The scenario's policy was checked as a dependency file's default: its keys
		// are the scenario's under policy.
		errs := make([]error, len(de.Problems))
		for i, p := range de.Problems {
			v := p.Value
			if str, ok := v.(string); ok {
				v = quoted(str) // a string the file wrote, shown as the file's value
			}
			errs[i] = &ConfigError{Package: "sim", Field: "policy" + strings.TrimPrefix(p.Path, "default"), Value: v, Problem: p.Message}
		}
		return errors.Join(errs...)
	}
	if ce, ok := errors.AsType[*ConfigError](err); ok {
		// The breaker names Go fields (Policy.FailureRateThreshold); the scenario, keys.
		return &ConfigError{Package: "sim", Field: "policy." + FileKey(strings.TrimPrefix(ce.Field, "Policy.")), Value: ce.Value, Problem: ce.Problem}
	}
	return fmt.Errorf("sim: policy: %s", strings.TrimPrefix(err.Error(), "dependencymap: "))
}

// quoted prints a string value quoted, as the file's errors do.
type quoted string

func (q quoted) String() string { return strconv.Quote(string(q)) }

// FileKey turns a Go field name of a policy into its key in a scenario or dependency
// file: FailureRateThreshold into failure_rate_threshold.
func FileKey(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// MarshalJSON writes the scenario in its file form (durations as "30s"), so a summary's
// scenario can be given back to ParseScenario.
func (s Scenario) MarshalJSON() ([]byte, error) {
	type file struct {
		Seed                    uint64         `json:"seed"`
		Duration                string         `json:"duration"`
		Users                   int            `json:"users"`
		TurnRate                float64        `json:"turn_rate"`
		Dependency              string         `json:"dependency"`
		Latency                 string         `json:"latency"`
		ErrorRate               float64        `json:"error_rate"`
		OutageStart             string         `json:"outage_start"`
		OutageEnd               string         `json:"outage_end"`
		OutageErrorRate         float64        `json:"outage_error_rate"`
		OutageMode              string         `json:"outage_mode"`
		ErrorLatency            string         `json:"error_latency"`
		RetryAfter              string         `json:"retry_after,omitempty"`
		ModelLatency            string         `json:"model_latency"`
		SubAgents               int            `json:"sub_agents"`
		ClientAttempts          int            `json:"client_attempts"`
		ClientBackoff           string         `json:"client_backoff"`
		Reissues                int            `json:"reissues"`
		ReissueAfterError       float64        `json:"reissue_after_error"`
		ReissueAfterUnavailable float64        `json:"reissue_after_unavailable"`
		ToolTimeout             string         `json:"tool_timeout"`
		TurnTimeout             string         `json:"turn_timeout"`
		Bulkhead                int            `json:"bulkhead"`
		Policy                  map[string]any `json:"policy"` // as given: over DefaultPolicy
		Strategies              []string       `json:"strategies"`
	}
	rate := func(f float64) float64 { // explicit zeros are kept as the smallest positive value
		if f < 1e-300 {
			return 0
		}
		return f
	}
	retryAfter := ""
	if s.RetryAfter > 0 {
		retryAfter = s.RetryAfter.String()
	}
	return json.Marshal(file{
		Seed: s.Seed, Duration: s.Duration.String(), Users: s.Users, TurnRate: s.TurnRate,
		Dependency: s.Dependency, Latency: s.Latency.String(), ErrorRate: rate(s.ErrorRate),
		OutageStart: s.OutageStart.Round(time.Millisecond).String(), OutageEnd: s.OutageEnd.String(),
		OutageErrorRate: rate(s.OutageErrorRate), OutageMode: s.OutageMode, ErrorLatency: s.ErrorLatency.String(),
		ModelLatency: s.ModelLatency.String(), SubAgents: s.SubAgents, ClientAttempts: s.ClientAttempts,
		ClientBackoff: s.ClientBackoff.String(), Reissues: max(s.Reissues, 0), ReissueAfterError: rate(s.ReissueAfterError),
		ReissueAfterUnavailable: rate(s.ReissueAfterUnavailable), ToolTimeout: s.ToolTimeout.String(),
		TurnTimeout: s.TurnTimeout.String(), Bulkhead: s.Bulkhead, Policy: policyKeys(s.Policy), Strategies: s.Strategies,
		RetryAfter: retryAfter,
	})
}

// policyKeys is a file policy as the keys it sets, so that the scenario a summary echoes
// reads back as the same scenario: "off" for a switched-off window count.
func policyKeys(fp depfile.Policy) map[string]any {
	out := map[string]any{}
	v := reflect.ValueOf(fp)
	for i := range v.NumField() {
		f := v.Field(i)
		if f.IsZero() {
			continue
		}
		key, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		switch x := f.Interface().(type) {
		case depfile.IntOrOff:
			if x < 0 {
				out[key] = depfile.Off
			} else {
				out[key] = int(x)
			}
		default:
			out[key] = x
		}
	}
	return out
}
