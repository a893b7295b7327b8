package syncbuf_test

import (
	"fmt"
	"log/slog"
	"sync"

	"github.com/agentbreaker/agentbreaker/internal/syncbuf"
)

func Example() {
	var buf syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { log.Info("hello") })
	}
	wg.Wait()
	fmt.Print(buf.String())
	// Output:
	// level=INFO msg=hello
	// level=INFO msg=hello
}
