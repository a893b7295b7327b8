package geminifake_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breakertest/geminifake"
)

func TestGateStepsAStream(t *testing.T) {
	s := geminifake.Start(t, geminifake.Config{})
	g := geminifake.NewGate(0)
	require.NoError(t, s.Enqueue(geminifake.Reply{Chunks: []string{"a", "b"}, Gate: g,
		Fail: &geminifake.Failure{Code: 503, AfterChunks: 2}}))
	c := client(t, s, nil)

	type item struct {
		text string
		err  error
	}
	items := make(chan item)
	go func() {
		defer close(items)
		for resp, err := range c.Models.GenerateContentStream(context.Background(), testModel, genai.Text("hi"), nil) {
			if err != nil {
				items <- item{err: err}
				return
			}
			items <- item{text: resp.Text()}
		}
	}()

	arrived := <-g.Arrived()
	assert.True(t, arrived.Stream)
	ctx := t.Context()
	require.NoError(t, g.Step(ctx))
	assert.Equal(t, "a", (<-items).text)
	select {
	case it := <-items:
		t.Fatalf("the stream went on without a step: %+v", it)
	default:
	}
	require.NoError(t, g.Step(ctx))
	assert.Equal(t, "b", (<-items).text)
	require.NoError(t, g.Step(ctx))
	var apiErr genai.APIError
	require.ErrorAs(t, (<-items).err, &apiErr)
	assert.Equal(t, 503, apiErr.Code)
	_, open := <-items
	assert.False(t, open)
}

func TestGateHoldsUntilReleasedOrClientLeaves(t *testing.T) {
	s := geminifake.Start(t, geminifake.Config{})
	g := geminifake.NewGate(0)
	require.NoError(t, s.SetReply(geminifake.Reply{Text: "late", Gate: g}))
	c := client(t, s, nil)

	// A client that gives up frees its held request.
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Models.GenerateContent(ctx, testModel, genai.Text("hi"), nil)
		errc <- err
	}()
	<-g.Arrived()
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)

	// Release lets every held request through, and later ones pass at once.
	var wg sync.WaitGroup
	texts := make([]string, 3)
	for i := range texts {
		wg.Go(func() {
			resp, err := c.Models.GenerateContent(context.Background(), testModel, genai.Text("hi"), nil)
			if assert.NoError(t, err) {
				texts[i] = resp.Text()
			}
		})
	}
	for range texts {
		<-g.Arrived()
	}
	g.Release()
	g.Release()
	wg.Wait()
	assert.Equal(t, []string{"late", "late", "late"}, texts)
	assert.Equal(t, 4, s.RequestsFor(testModel))
}

func TestCloseReleasesHeldRequests(t *testing.T) {
	s, err := geminifake.New(geminifake.Config{})
	require.NoError(t, err)
	g := geminifake.NewGate(1)
	require.NoError(t, s.SetReply(geminifake.Reply{Gate: g}))
	c := client(t, s, nil)
	errc := make(chan error, 1)
	go func() {
		_, err := c.Models.GenerateContent(context.Background(), testModel, genai.Text("hi"), nil)
		errc <- err
	}()
	<-g.Arrived()
	s.Close()
	s.Close()
	require.Error(t, <-errc, "the held request ends with the server")
}

func TestStepGivesUpWithItsContext(t *testing.T) {
	g := geminifake.NewGate(0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, g.Step(ctx), context.Canceled)
}

func TestConcurrentRequestsAreCountedExactly(t *testing.T) {
	s := geminifake.Start(t, geminifake.Config{})
	c := client(t, s, nil)
	const n = 40
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if i%4 == 0 {
				assert.NoError(t, s.Enqueue(geminifake.Reply{Text: "queued"}))
			}
			if i%2 == 0 {
				_, err := c.Models.GenerateContent(context.Background(), testModel, genai.Text("hi"), nil)
				assert.NoError(t, err)
				return
			}
			for _, err := range c.Models.GenerateContentStream(context.Background(), "other", genai.Text("hi"), nil) {
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, n, s.Requests())
	assert.Equal(t, n/2, s.RequestsFor(testModel))
	assert.Equal(t, n/2, s.RequestsFor("other"))
	assert.Len(t, s.Log(), n)
}
