package a2aguard

import (
	"context"
	"iter"

	"github.com/a2aproject/a2a-go/v2/a2a"
	remoteagent "google.golang.org/adk/v2/agent/remoteagent/v2"
)

// client wraps the a2a client adk-go sends the request with. It gives each admitted
// request its deadline and its record, sends it with the caller's operation scope
// while the request adk-go keeps (and shows the user) goes without (wireRequest), and
// reports the outcome to the breaker before the event that ends the request reaches
// the after-callback (adk-go runs the callbacks from inside the stream). A request the
// before-callback did not admit (none of ours: the map has no call for it) passes
// through untouched.
type client struct {
	inner remoteagent.A2AClient
	g     *guard
}

func (c *client) callOf(req *a2a.SendMessageRequest) *call {
	v, ok := c.g.calls.Load(req)
	if !ok {
		return nil
	}
	cl := v.(*call)
	cl.mu.Lock()
	defer cl.mu.Unlock()
	if cl.started || cl.done {
		return nil // one call, one send
	}
	cl.started = true
	return cl
}

// SendMessage is the request of a run without streaming (a transfer under the
// runner's default mode).
func (c *client) SendMessage(ctx context.Context, req *a2a.SendMessageRequest) (a2a.SendMessageResult, error) {
	cl := c.callOf(req)
	if cl == nil {
		return c.inner.SendMessage(ctx, req)
	}
	rec := &record{}
	rctx, cancel := c.g.bound(ctx)
	defer cancel()
	res, err := c.inner.SendMessage(withRecord(rctx, rec), wireRequest(req))
	var last a2a.Event
	if res != nil {
		last = res
	}
	c.g.finish(ctx, rctx, cl, rec, last, err)
	return res, err
}

// SendStreamingMessage is the request of a streaming run (an AgentTool's nested
// runner always streams).
func (c *client) SendStreamingMessage(ctx context.Context, req *a2a.SendMessageRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		cl := c.callOf(req)
		if cl == nil {
			for ev, err := range c.inner.SendStreamingMessage(ctx, req) {
				if !yield(ev, err) {
					return
				}
			}
			return
		}
		cl.mu.Lock()
		cl.streaming = true
		cl.mu.Unlock()
		defer c.g.calls.Delete(req) // the after-callbacks of every event have run
		rec := &record{}
		rctx, cancel := c.g.bound(ctx)
		defer cancel()
		var last a2a.Event
		finished := false
		for ev, err := range c.inner.SendStreamingMessage(withRecord(rctx, rec), wireRequest(req)) {
			if err != nil {
				c.g.finish(ctx, rctx, cl, rec, last, err)
				yield(nil, err)
				return
			}
			if ev == nil {
				continue
			}
			last = ev
			if _, _, final := finalState(ev); final && !finished {
				c.g.finish(ctx, rctx, cl, rec, ev, nil)
				finished = true
			}
			if !yield(ev, nil) {
				c.g.abandon(cl)
				return
			}
		}
		if !finished {
			c.g.finish(ctx, rctx, cl, rec, last, nil)
		}
	}
}

// CancelTask passes through: adk-go sends it after a run that stopped before the task
// ended, under its own five-second timeout.
func (c *client) CancelTask(ctx context.Context, req *a2a.CancelTaskRequest) (*a2a.Task, error) {
	return c.inner.CancelTask(ctx, req)
}

// Destroy implements remoteagent.A2AClient.
func (c *client) Destroy() error { return c.inner.Destroy() }
