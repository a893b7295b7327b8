package retry_test

import (
	"context"
	"fmt"
	"time"

	"github.com/agentbreaker/agentbreaker/classify"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/retry"
)

func Example() {
	fc := clock.NewFake(time.Time{})
	r := retry.MustNew(retry.Config{
		Policy:  retry.Policy{MaxAttempts: 4, Deadline: time.Minute, Version: "crm-retry-v1"},
		Clock:   fc,
		Sleeper: &retry.FakeSleeper{Clock: fc}, // examples and tests never wait
		Rand:    func() float64 { return 0.5 },
		// A quiet dependency gets one retry per 10s by default; allow more here.
		Budgets: retry.MustNewBudgets(retry.BudgetConfig{Clock: fc, MinRetriesPerSecond: 1}),
		OnAttempt: []func(context.Context, retry.Event){func(_ context.Context, e retry.Event) {
			next := string(e.Stop)
			if e.Retry {
				next = "retry in " + e.Delay.String()
			}
			fmt.Printf("attempt %d: %s %s, next: %s\n", e.Attempt, e.Outcome, e.ErrorClass, next)
		}},
	})

	answers := []classify.Class{classify.ClassConnectionRefused, classify.ClassHTTP429, classify.ClassNone}
	res := r.Do(context.Background(), retry.Operation{Dependency: "crm", Tool: "lookup_customer"},
		func(ctx context.Context, a retry.Info) (classify.Classification, error) {
			c := classify.ForClass(answers[a.Number-1])
			if c.Class == classify.ClassHTTP429 {
				c.RetryAfter = 2 * time.Second // the server's delay is a floor
			}
			return c, nil
		})
	fmt.Println(res.Outcome, res.Reason, res.Attempts)
	// Output:
	// attempt 1: FAILED_BEFORE_SEND connection_refused, next: retry in 50ms
	// attempt 2: FAILED http_429, next: retry in 2s
	// attempt 3: SUCCEEDED none, next: succeeded
	// SUCCEEDED succeeded 3
}

// A mutation whose outcome is unknown is not sent again.
func Example_unknownOutcome() {
	r := retry.MustNew(retry.Config{Sleeper: &retry.FakeSleeper{}})
	sent := 0
	res := r.Do(context.Background(), retry.Operation{Dependency: "mail", Tool: "send_email"},
		func(ctx context.Context, a retry.Info) (classify.Classification, error) {
			sent++
			return classify.ForClass(classify.ClassTimeout), nil // written, then no answer
		})
	fmt.Println(res.Outcome, res.Reason, "sent:", sent)
	// Output:
	// UNKNOWN unknown_outcome sent: 1
}

func ExampleRetrier_Track() {
	r := retry.MustNew(retry.Config{})
	args := map[string]any{"city": "Paris"}
	first, _, _ := r.Track("invocation-1", retry.Operation{Dependency: "weather", Tool: "get_weather", Args: args})
	a, _ := first.Admit(context.Background())
	a.Finish(context.Background(), classify.ForClass(classify.ClassConnectionRefused), nil)

	// The model calls the tool again with the same arguments in the same invocation.
	again, reissue, _ := r.Track("invocation-1", retry.Operation{Dependency: "weather", Tool: "get_weather", Args: args})
	fmt.Println("same operation:", again == first, "re-issue:", reissue, "same key:", again.IdempotencyKey() == first.IdempotencyKey())
	r.Forget("invocation-1") // in adk-go's AfterRun callback
	// Output:
	// same operation: true re-issue: true same key: true
}

func ExampleBudget() {
	fc := clock.NewFake(time.Time{})
	b, _ := retry.NewBudget(retry.BudgetConfig{Clock: fc}) // 10% plus one retry per 10s
	for range 50 {
		b.Request()
	}
	granted := 0
	for range 100 {
		if b.TryRetry() {
			granted++
		}
	}
	fmt.Println("retries granted to 50 operations:", granted)
	// Output:
	// retries granted to 50 operations: 6
}
