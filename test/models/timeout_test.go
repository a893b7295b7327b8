package models

import (
	"sync"
	"testing"
	"time"

	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/modelfailover"
)

// timerClock is a modelfailover.TimerClock over clock.Fake: the documented interface
// (AfterFunc), so that the Failover's time bounds fire when the test moves the clock.
type timerClock struct {
	*clock.Fake
	mu     sync.Mutex
	timers []*fakeTimer
}

type fakeTimer struct {
	at      time.Time
	f       func()
	stopped bool
}

func (c *timerClock) AfterFunc(d time.Duration, f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	tm := &fakeTimer{at: c.Now().Add(d), f: f}
	c.timers = append(c.timers, tm)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !tm.stopped
		tm.stopped = true
		return was
	}
}

func (c *timerClock) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, tm := range c.timers {
		if !tm.stopped {
			n++
		}
	}
	return n
}

// advance moves the clock and runs, each on its own goroutine, the timers now due.
func (c *timerClock) advance(d time.Duration) {
	now := c.Fake.Advance(d)
	c.mu.Lock()
	var due []func()
	for _, tm := range c.timers {
		if !tm.stopped && !tm.at.After(now) {
			tm.stopped = true
			due = append(due, tm.f)
		}
	}
	c.mu.Unlock()
	for _, f := range due {
		go f()
	}
}

// docs/model-failover.md, "Time bounds": AttemptTimeout bounds "the wait for the first
// response: the whole answer when not streamed", its expiry "is the route's failure,
// class timeout, ... failed over" when nothing was given; "The bounds run on
// Config.Clock when it implements modelfailover.TimerClock"; in the callbacks path
// "failover.Transport enforces all three on the HTTP exchange, for any client". And the
// route tests' summary: "a hang is cut by AttemptTimeout on the fake clock and fails
// over after one request". openai-go's default client (MaxRetries 2) is the primary.
func TestHangCutByAttemptTimeoutOnTimerClock(t *testing.T) {
	for _, p := range allPaths {
		t.Run(string(p), func(t *testing.T) {
			w := newWorld(t, false)
			tc := &timerClock{Fake: w.clk}
			srv, fb := newOpenAIServer(t), newGeminiServer(t)
			srv.set(answer{Hang: true})
			fb.set(answer{Text: fallbackText})
			fallback := modelfailover.Route{Model: flashModel, Region: region, LLM: geminiModel(t, fb, flashModel, modelfailover.NewTransport(nil), false)}
			cfg := modelfailover.Config{Breakers: w.deps, Clock: tc, AttemptTimeout: 10 * time.Second}
			var h *breakertest.Harness
			if p == modelPath {
				cfg.Routes = []modelfailover.Route{{Model: gptModel, Region: region, LLM: openAIDefault(t, srv, modelfailover.NewTransport(nil))}, fallback}
				h = harness(t, asModel(modelfailover.MustNew(cfg)))
			} else {
				cfg.Routes = []modelfailover.Route{{Model: gptModel, Region: region}, fallback}
				f := modelfailover.MustNew(cfg)
				h = harness(t, asCallbacks(f, openAIDefault(t, srv, f.Transport(nil))))
			}
			result := make(chan *breakertest.Turn, 1)
			go func() { result <- turn(t, h) }()
			select {
			case <-srv.hung:
			case <-time.After(turnWall):
				t.Fatal("the primary never received the request")
			}
			// The bound's timer is armed before the request is sent; move past it.
			deadline := time.Now().Add(turnWall)
			for tc.pending() == 0 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond) // bounded wait for the timer to be armed, not a time source
			}
			tc.advance(11 * time.Second)
			var tr *breakertest.Turn
			select {
			case tr = <-result:
			case <-time.After(turnWall):
				t.Fatal("AttemptTimeout on the TimerClock did not cut the hanging attempt")
			}
			if got := tr.FinalText(); got != fallbackText {
				t.Errorf("final text %q (error %q), want the fallback's", got, turnError(tr))
			}
			if got := srv.count(); got != 1 {
				t.Errorf("the hanging primary received %d requests, want 1", got)
			}
		})
	}
}
