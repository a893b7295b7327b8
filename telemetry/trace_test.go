package telemetry_test

import (
	"context"
	"iter"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/agent/llmagent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/runner"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/adk/v2/tool/functiontool"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/dependencymap"
	spans "github.com/agentbreaker/agentbreaker/telemetry/internal/span"
	"github.com/agentbreaker/agentbreaker/telemetry/observe"
)

func attrMap(kvs []attribute.KeyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.AsInterface()
	}
	return m
}

func TestAnnotateSpanAddsAttributesAndOneEventPerDecision(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx, span := tp.Tracer("test").Start(context.Background(), "execute_tool lookup_customer")
	f := newFixture(t)

	f.tel.CallOutcome(ctx, observe.Call{Dependency: "crm", Tool: "lookup_customer", Attempt: 1, Outcome: classify.Unknown, Class: classify.ClassTimeout, Elapsed: 3 * time.Second})
	f.tel.ShortCircuit(ctx, observe.ShortCircuit{Dependency: "crm", Tool: "lookup_customer", Attempt: 2, State: breaker.Open, RetryAfter: 30 * time.Second})
	span.End()

	ended := rec.Ended()
	require.Len(t, ended, 1)
	// The attributes hold the last decision...
	require.Subset(t, attrMap(ended[0].Attributes()), map[string]any{
		"agentbreaker.decision": "short_circuit", "agentbreaker.dependency": "crm", "agentbreaker.breaker_state": "open",
		"agentbreaker.attempt": int64(2), "agentbreaker.outcome": "FAILED_BEFORE_SEND", "agentbreaker.error_class": "breaker_open",
		"agentbreaker.retry_after_ms": int64(30000),
	})
	// ...and the events every decision, in order.
	events := ended[0].Events()
	require.Len(t, events, 2)
	require.Equal(t, "agentbreaker.attempt", events[0].Name)
	require.Subset(t, attrMap(events[0].Attributes), map[string]any{
		"agentbreaker.outcome": "UNKNOWN", "agentbreaker.error_class": "timeout", "agentbreaker.elapsed_ms": 3000.0,
	})
	require.Equal(t, "agentbreaker.short_circuit", events[1].Name)
}

func TestAnnotateSpanWithoutARecordingSpan(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(sdktrace.NeverSample()))
	ctx, span := tp.Tracer("test").Start(context.Background(), "unsampled")
	spans.Annotate(ctx, spans.Decision{Kind: spans.DecisionFailover, From: "a", To: "b"})
	spans.Annotate(context.Background(), spans.Decision{Kind: spans.DecisionFailover})
	span.End()
	require.Empty(t, rec.Ended())

	rec2 := tracetest.NewSpanRecorder()
	ctx, span = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec2)).Tracer("test").Start(context.Background(), "kindless")
	spans.Annotate(ctx, spans.Decision{Dependency: "crm"}) // no Kind: dropped
	span.End()
	require.Empty(t, rec2.Ended()[0].Events())
}

// adk-go takes its tracer from the global provider when the package loads; the global
// provider delegates to the first provider set, so the process gets one recorder.
var (
	globalOnce     sync.Once
	globalRecorder *tracetest.SpanRecorder
)

func globalSpans() *tracetest.SpanRecorder {
	globalOnce.Do(func() {
		globalRecorder = tracetest.NewSpanRecorder()
		otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(globalRecorder)))
	})
	return globalRecorder
}

// scriptedModel asks for one lookup_customer call, then answers in text once the
// function response is in the conversation.
type scriptedModel struct{}

func (scriptedModel) Name() string { return "scripted" }

func (scriptedModel) GenerateContent(_ context.Context, req *model.LLMRequest, _ bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		last := req.Contents[len(req.Contents)-1]
		for _, p := range last.Parts {
			if p.FunctionResponse != nil {
				yield(&model.LLMResponse{Content: genai.NewContentFromText("The CRM is down; I will try later.", genai.RoleModel)}, nil)
				return
			}
		}
		yield(&model.LLMResponse{Content: genai.NewContentFromParts([]*genai.Part{{
			FunctionCall: &genai.FunctionCall{ID: "call-1", Name: "lookup_customer", Args: map[string]any{"id": "42"}},
		}}, genai.RoleModel)}, nil)
	}
}

// TestDecisionLandsOnADKToolSpan runs the real adk-go runner: a before-tool callback
// finds the breaker forced open, short-circuits the call and reports it; the decision
// must land on the "execute_tool" span adk-go created for that call, and the log record
// must carry the run's invocation ID and the model's function call ID.
func TestDecisionLandsOnADKToolSpan(t *testing.T) {
	rec := globalSpans()
	f := newFixture(t)
	deps := dependencymap.MustNew(dependencymap.Config{
		Dependencies:  map[string]dependencymap.Dependency{"crm": {Tools: []string{"lookup_customer"}}},
		OnStateChange: []func(breaker.Event){f.tel.BreakerEvent},
	})
	f.tel.Watch(deps)
	crm, _ := deps.Get("crm")
	crm.ForceOpen("incident 4711")

	var ran bool
	lookup, err := functiontool.New(functiontool.Config{Name: "lookup_customer", Description: "Looks a customer up."},
		func(agent.Context, struct{ ID string }) (map[string]any, error) {
			ran = true
			return map[string]any{"name": "Ada"}, nil
		})
	require.NoError(t, err)
	guard := func(ctx agent.Context, tl tool.Tool, _ map[string]any) (map[string]any, error) {
		b, err := deps.ForTool(tl.Name())
		if err != nil || b == nil {
			return nil, err
		}
		if _, err := b.Allow(); err != nil {
			var open *breaker.OpenError
			require.ErrorAs(t, err, &open)
			f.tel.ShortCircuit(ctx, observe.ShortCircuit{Dependency: b.Name(), Tool: tl.Name(), State: open.State})
			return map[string]any{"response_type": "agentbreaker.unavailable", "dependency": b.Name()}, nil
		}
		return nil, nil
	}
	a, err := llmagent.New(llmagent.Config{
		Name: "assistant", Model: scriptedModel{}, Tools: []tool.Tool{lookup},
		BeforeToolCallbacks: []llmagent.BeforeToolCallback{guard},
	})
	require.NoError(t, err)
	r, err := runner.NewInMemory("telemetry-test", a)
	require.NoError(t, err)

	var invocation string
	for ev, err := range r.Run(context.Background(), "user", "session-1", genai.NewContentFromText("Who is customer 42?", genai.RoleUser), agent.RunConfig{}) {
		require.NoError(t, err)
		invocation = ev.InvocationID
	}
	require.False(t, ran, "the short-circuit kept the tool from running")
	require.NotEmpty(t, invocation)

	var toolSpan sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "execute_tool lookup_customer" && attrMap(s.Attributes())["agentbreaker.dependency"] == "crm" {
			toolSpan = s
		}
	}
	require.NotNil(t, toolSpan, "adk-go's execute_tool span carries the decision")
	require.Subset(t, attrMap(toolSpan.Attributes()), map[string]any{
		"agentbreaker.decision": "short_circuit", "agentbreaker.breaker_state": "forced_open",
		"gen_ai.tool.name": "lookup_customer", // adk-go's own attribute: it is adk's span
	})
	require.Len(t, toolSpan.Events(), 1)
	require.Equal(t, "agentbreaker.short_circuit", toolSpan.Events()[0].Name)

	logged := f.logs.withMsg(t, "agentbreaker: call short-circuited")
	require.Len(t, logged, 1)
	require.Equal(t, invocation, logged[0]["request_id"])
	require.Equal(t, "call-1", logged[0]["function_call_id"])
	require.Equal(t, "forced_open", logged[0]["breaker_state"])
}
