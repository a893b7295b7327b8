package classify_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/classify"
)

func TestClassifyPrecedence(t *testing.T) {
	t.Parallel()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Unix(0, 0))
	t.Cleanup(cancel2)
	live := context.Background()
	refused := dial(os.NewSyscallError("connect", syscall.ECONNREFUSED))
	opaque := errors.New("unexpected response")
	inBand := map[string]any{"status": "error", "error_type": "not_found"}

	tests := []struct {
		name string
		in   classify.Input
		want classify.Classification
	}{
		{name: "nothing at all", in: classify.Input{}, want: classify.ForClass(classify.ClassNone)},
		{name: "done context alone", in: classify.Input{Context: canceled}, want: classify.ForClass(classify.ClassNone)},

		// 1. A done caller context.
		{name: "caller cancelled, opaque error", in: classify.Input{Context: canceled, Err: opaque},
			want: classify.ForClass(classify.ClassCanceled)},
		{name: "caller deadline, timeout error", in: classify.Input{Context: expired, Err: context.DeadlineExceeded},
			want: classify.ForClass(classify.ClassDeadline)},
		{name: "caller deadline during dial keeps before-send", in: classify.Input{Context: expired, Err: refused},
			want: with(classify.ClassDeadline, func(c *classify.Classification) { c.Outcome = classify.FailedBeforeSend })},
		{name: "caller cancelled, local rejection", in: classify.Input{Context: canceled, Err: rejected{"breaker_open"}},
			want: with(classify.ClassCanceled, func(c *classify.Classification) { c.Outcome = classify.FailedBeforeSend })},
		{name: "caller cancelled, 503 answer", in: classify.Input{Context: canceled, StatusCode: 503, Header: http.Header{"Retry-After": {"3"}}},
			want: with(classify.ClassCanceled, func(c *classify.Classification) {
				c.Outcome = classify.Failed
				c.StatusCode = 503
				c.RetryAfter = 3 * time.Second
			})},
		{name: "caller cancelled, in-band tool error", in: classify.Input{Context: canceled, Result: map[string]any{"error": "context canceled"}},
			want: with(classify.ClassCanceled, func(c *classify.Classification) { c.Outcome = classify.Failed })},
		{name: "caller cancelled after a success", in: classify.Input{Context: canceled, StatusCode: 200, Result: map[string]any{"ok": true}},
			want: with(classify.ClassNone, func(c *classify.Classification) { c.StatusCode = 200 })},

		// 2–3. The error, with a live context.
		{name: "canceled error, caller not done", in: classify.Input{Context: live, Err: context.Canceled},
			want: classify.ForClass(classify.ClassCanceled)},
		{name: "our own deadline", in: classify.Input{Context: live, Err: fmt.Errorf("tool: %w", context.DeadlineExceeded)},
			want: classify.ForClass(classify.ClassTimeout)},
		{name: "local rejection", in: classify.Input{Context: live, Err: rejected{"bulkhead_full"}, StatusCode: 503},
			want: with(classify.ClassBulkheadFull, func(c *classify.Classification) { c.StatusCode = 503 })},
		{name: "known error beats status", in: classify.Input{Err: refused, StatusCode: 404},
			want: with(classify.ClassConnectionRefused, func(c *classify.Classification) { c.StatusCode = 404 })},
		{name: "known error takes header delay", in: classify.Input{Err: context.DeadlineExceeded, Header: http.Header{"Retry-After": {"4"}}},
			want: with(classify.ClassTimeout, func(c *classify.Classification) { c.RetryAfter = 4 * time.Second })},

		// 4. Status code, also behind an opaque error.
		{name: "opaque error with 404", in: classify.Input{Err: opaque, StatusCode: 404},
			want: with(classify.ClassNotFound, func(c *classify.Classification) { c.StatusCode = 404 })},
		{name: "opaque error with 200", in: classify.Input{Err: opaque, StatusCode: 200},
			want: with(classify.ClassUnclassified, func(c *classify.Classification) { c.StatusCode = 200 })},
		{name: "429 with header", in: classify.Input{StatusCode: 429, Header: http.Header{"Retry-After": {"5"}}},
			want: with(classify.ClassHTTP429, func(c *classify.Classification) {
				c.StatusCode = 429
				c.RetryAfter = 5 * time.Second
			})},
		{name: "503 with date uses Now", in: classify.Input{StatusCode: 503, Header: http.Header{"Retry-After": {"Sun, 01 Mar 2026 12:00:45 GMT"}}, Now: refNow},
			want: with(classify.ClassHTTP5xx, func(c *classify.Classification) {
				c.Outcome = classify.Failed
				c.StatusCode = 503
				c.RetryAfter = 45 * time.Second
			})},
		{name: "status beats result", in: classify.Input{StatusCode: 500, Result: inBand},
			want: with(classify.ClassHTTP5xx, func(c *classify.Classification) { c.StatusCode = 500 })},

		// 5. The result map.
		{name: "200 with in-band failure", in: classify.Input{StatusCode: 200, Result: inBand},
			want: classify.ForClass(classify.ClassNotFound)},
		{name: "opaque error with in-band failure", in: classify.Input{Err: opaque, Result: inBand},
			want: classify.ForClass(classify.ClassNotFound)},
		{name: "result alone", in: classify.Input{Result: map[string]any{"results": []any{}}},
			want: classify.ForClass(classify.ClassNone)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := classify.Classify(tt.in)
			require.Equal(t, tt.want, got)
			requireValid(t, got)

			var nilClassifier *classify.Classifier
			require.Equal(t, got, nilClassifier.Classify(tt.in), "nil Classifier applies the defaults")
			require.Equal(t, got, classify.MustNew(classify.Config{}).Classify(tt.in))
		})
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	pass := func(classify.Input) (classify.Classification, bool) { return classify.Classification{}, false }
	tests := []struct {
		name    string
		cfg     classify.Config
		wantErr string
	}{
		{name: "zero config", cfg: classify.Config{}},
		{name: "rules", cfg: classify.Config{Rules: []classify.Rule{pass, pass}}},
		{name: "nil first rule", cfg: classify.Config{Rules: []classify.Rule{nil}}, wantErr: "classify: Config.Rules[0] = nil: rule is nil"},
		{name: "nil later rule", cfg: classify.Config{Rules: []classify.Rule{pass, pass, nil}}, wantErr: "classify: Config.Rules[2] = nil: rule is nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := classify.New(tt.cfg)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, classify.ErrNilRule)
				require.EqualError(t, err, tt.wantErr)
				require.Nil(t, c)
				require.PanicsWithError(t, tt.wantErr, func() { classify.MustNew(tt.cfg) })
				return
			}
			require.NoError(t, err)
			require.NotNil(t, c)
		})
	}
}

func TestNewCopiesRules(t *testing.T) {
	t.Parallel()
	notFound := classify.ForClass(classify.ClassNotFound)
	rules := []classify.Rule{func(classify.Input) (classify.Classification, bool) { return notFound, true }}
	c := classify.MustNew(classify.Config{Rules: rules})
	rules[0] = nil
	require.Equal(t, notFound, c.Classify(classify.Input{}), "changing the caller's slice must not reach the classifier")
}

var errNoSuchCustomer = errors.New("crm: no such customer")

func TestClassifierRules(t *testing.T) {
	t.Parallel()
	overloaded := classify.ForClass(classify.ClassHTTP5xx)
	c := classify.MustNew(classify.Config{Rules: []classify.Rule{
		classify.MatchError(errNoSuchCustomer, classify.ForClass(classify.ClassNotFound)),
		classify.MatchStatus(http.StatusConflict, overloaded),
		classify.MatchStatus(0, classify.ForClass(classify.ClassAuth)), // never matches
		func(in classify.Input) (classify.Classification, bool) {
			switch in.Result["kind"] {
			case "bogus class":
				return classify.Classification{Outcome: classify.Failed, Class: "disk on fire", Verdict: classify.Counts}, true
			case "partial":
				return classify.Classification{Verdict: classify.Neutral}, true
			case "negative delay":
				return with(classify.ClassHTTP429, func(c *classify.Classification) { c.RetryAfter = -time.Second }), true
			}
			return classify.Classification{}, false
		},
	}})
	tests := []struct {
		name string
		in   classify.Input
		want classify.Classification
	}{
		{name: "error rule", in: classify.Input{Err: fmt.Errorf("lookup: %w", errNoSuchCustomer)},
			want: classify.ForClass(classify.ClassNotFound)},
		{name: "status rule on http", in: classify.Input{StatusCode: 409},
			want: with(classify.ClassHTTP5xx, func(c *classify.Classification) { c.StatusCode = 409 })},
		{name: "status rule on api error", in: classify.Input{Err: fmt.Errorf("model: %w", genai.APIError{Code: 409, Status: "ABORTED"})},
			want: with(classify.ClassHTTP5xx, func(c *classify.Classification) { c.StatusCode = 409 })},
		{name: "status rule on api error pointer", in: classify.Input{Err: &genai.APIError{Code: 409}},
			want: with(classify.ClassHTTP5xx, func(c *classify.Classification) { c.StatusCode = 409 })},
		{name: "zero status rule ignores calls without status", in: classify.Input{},
			want: classify.ForClass(classify.ClassNone)},
		{name: "unknown class from rule is bounded", in: classify.Input{Result: map[string]any{"kind": "bogus class"}},
			want: classify.Classification{Outcome: classify.Failed, Class: classify.ClassUnclassified, Verdict: classify.Counts}},
		{name: "partial rule answer filled from defaults", in: classify.Input{Err: context.Canceled, Result: map[string]any{"kind": "partial"}},
			want: classify.Classification{Outcome: classify.Unknown, Class: classify.ClassCanceled, Verdict: classify.Neutral}},
		{name: "negative delay from rule", in: classify.Input{Result: map[string]any{"kind": "negative delay"}},
			want: classify.ForClass(classify.ClassHTTP429)},
		{name: "no rule matches", in: classify.Input{StatusCode: 404},
			want: with(classify.ClassNotFound, func(c *classify.Classification) { c.StatusCode = 404 })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, c.Classify(tt.in))
		})
	}
}

func TestRulesRunInOrder(t *testing.T) {
	t.Parallel()
	var calls []int
	rule := func(i int, match bool) classify.Rule {
		return func(classify.Input) (classify.Classification, bool) {
			calls = append(calls, i)
			return classify.ForClass(classify.ClassHTTP4xx), match
		}
	}
	c := classify.MustNew(classify.Config{Rules: []classify.Rule{rule(0, false), rule(1, true), rule(2, true)}})
	require.Equal(t, classify.ClassHTTP4xx, c.Classify(classify.Input{}).Class)
	require.Equal(t, []int{0, 1}, calls)
}
