package geminifake

import (
	"context"
	"sync"
)

// Gate holds requests at their steps until the test lets them go. A request that
// uses a gate stops before a whole answer, before each streamed chunk and before a
// stream's last event (the finish or the failure).
//
// A Gate is safe for concurrent use and may be shared by several requests. Held
// requests also give up when their client goes away or the server closes.
type Gate struct {
	arrived chan Request
	step    chan struct{}
	open    chan struct{}
	once    sync.Once
}

// NewGate returns a closed gate. arrivals is how many arrivals [Gate.Arrived] can
// buffer before a held request waits for the test to read them; below 1 means 64.
func NewGate(arrivals int) *Gate {
	if arrivals < 1 {
		arrivals = 64
	}
	return &Gate{
		arrived: make(chan Request, arrivals),
		step:    make(chan struct{}),
		open:    make(chan struct{}),
	}
}

// Arrived receives each request when it first reaches the gate, so a test knows a
// request is being held.
func (g *Gate) Arrived() <-chan Request { return g.arrived }

// Step lets exactly one held request pass one step. It blocks until a request
// takes the step or ctx ends, and returns ctx's error in that case.
func (g *Gate) Step(ctx context.Context) error {
	select {
	case g.step <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Release opens the gate for good: every held and future step passes. It is safe
// to call more than once.
func (g *Gate) Release() { g.once.Do(func() { close(g.open) }) }

// arrive announces a request; it gives up when done closes.
func (g *Gate) arrive(req Request, done <-chan struct{}, closing <-chan struct{}) bool {
	select {
	case g.arrived <- req:
		return true
	case <-done:
	case <-closing:
	}
	return false
}

// wait holds one step; false means the request must give up.
func (g *Gate) wait(done <-chan struct{}, closing <-chan struct{}) bool {
	select {
	case <-g.open:
		return true
	default:
	}
	select {
	case <-g.open:
		return true
	case <-g.step:
		return true
	case <-done:
	case <-closing:
	}
	return false
}
