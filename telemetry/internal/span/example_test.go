package span_test

import (
	"context"
	"fmt"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/telemetry/internal/span"
)

// A breaker transition recorded on the span in a context: one event, its attributes
// the keys of the transition's log record under "agentbreaker.".
func Example() {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx, s := tp.Tracer("example").Start(context.Background(), "execute_tool get_invoice")
	fmt.Println("recording:", span.Recording(ctx), span.Recording(context.Background()))
	span.Annotate(ctx, span.Transition(breaker.Event{Breaker: "billing", From: breaker.Closed, To: breaker.Open,
		Cause: breaker.CauseFailureRate, Reason: "failure rate 50% over 4 calls", Generation: 1,
		Window: breaker.Counts{Calls: 4, Failures: 2}, At: time.Unix(0, 0)}))
	s.End()
	e := rec.Ended()[0].Events()[0]
	fmt.Println(e.Name)
	for _, kv := range e.Attributes {
		fmt.Printf("  %s=%s\n", kv.Key, kv.Value.String())
	}
	// Output:
	// recording: true false
	// agentbreaker.transition
	//   agentbreaker.decision=transition
	//   agentbreaker.dependency=billing
	//   agentbreaker.breaker_state=open
	//   agentbreaker.from=closed
	//   agentbreaker.to=open
	//   agentbreaker.cause=failure_rate
	//   agentbreaker.reason=failure rate 50% over 4 calls
	//   agentbreaker.generation=1
	//   agentbreaker.window_calls=4
	//   agentbreaker.window_failed_calls=2
}
