package journal_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/internal/journaltest"
)

// BenchmarkIntend measures durable intents per second with 1, 8 and 64 concurrent
// writers on both backends, and how many intents share each commit.
//
//	cd test && go test -run '^$' -bench Intend -benchtime 3s ./journal/
func BenchmarkIntend(b *testing.B) {
	for _, be := range journaltest.Backends {
		for _, writers := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("%s/writers=%d", be.Name, writers), func(b *testing.B) {
				j := journaltest.Open(b, be.Config(b))
				ctx := context.Background()
				var next atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				start := time.Now()
				for range writers {
					wg.Go(func() {
						for {
							i := next.Add(1)
							if i > int64(b.N) {
								return
							}
							if _, err := j.Intend(ctx, journaltest.Dispatch(int(i))); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				elapsed := time.Since(start)
				b.StopTimer()
				st := j.Stats()
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "intents/s")
				b.ReportMetric(float64(st.Writes)/float64(max(1, st.Commits)), "intents/commit")
			})
		}
	}
}
