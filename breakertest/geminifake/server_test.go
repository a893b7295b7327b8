package geminifake_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/breakertest/geminifake"
	"github.com/agentbreaker/agentbreaker/classify"
)

const testModel = "gemini-test"

func client(t *testing.T, s *geminifake.Server, wrap func(http.RoundTripper) http.RoundTripper) *genai.Client {
	t.Helper()
	c, err := genai.NewClient(t.Context(), s.ClientConfig(wrap))
	require.NoError(t, err)
	return c
}

func generate(t *testing.T, c *genai.Client, text string) (*genai.GenerateContentResponse, error) {
	t.Helper()
	return c.Models.GenerateContent(t.Context(), testModel, genai.Text(text), nil)
}

// stream collects a stream's texts and its first error.
func stream(ctx context.Context, c *genai.Client) (texts []string, finish genai.FinishReason, err error) {
	for resp, err := range c.Models.GenerateContentStream(ctx, testModel, genai.Text("hi"), nil) {
		if err != nil {
			return texts, finish, err
		}
		texts = append(texts, resp.Text())
		if len(resp.Candidates) > 0 && resp.Candidates[0].FinishReason != "" {
			finish = resp.Candidates[0].FinishReason
		}
	}
	return texts, finish, nil
}

func TestAnswersAndCounts(t *testing.T) {
	s := geminifake.Start(t, geminifake.Config{Name: "us-east1", Reply: geminifake.Reply{Text: "hello there"}})
	c := client(t, s, nil)

	resp, err := generate(t, c, "say hello")
	require.NoError(t, err)
	assert.Equal(t, "hello there", resp.Text())
	assert.Equal(t, genai.FinishReasonStop, resp.Candidates[0].FinishReason)
	assert.Equal(t, int32(2), resp.UsageMetadata.PromptTokenCount)
	assert.Equal(t, testModel, resp.ModelVersion)

	assert.Equal(t, 1, s.Requests())
	assert.Equal(t, 1, s.RequestsFor(testModel))
	assert.Equal(t, 0, s.RequestsFor("other"))
	log := s.Log()
	require.Len(t, log, 1)
	assert.Equal(t, "generateContent", log[0].Method)
	assert.False(t, log[0].Stream)
	assert.Equal(t, "say hello", log[0].Contents[0].Parts[0].Text)
	assert.Equal(t, "geminifake-key", log[0].Header.Get("x-goog-api-key"))
}

func TestStreamsChunks(t *testing.T) {
	s := geminifake.Start(t, geminifake.Config{Reply: geminifake.Reply{Chunks: []string{"one ", "two ", "three"}}})
	c := client(t, s, nil)

	texts, finish, err := stream(t.Context(), c)
	require.NoError(t, err)
	assert.Equal(t, []string{"one ", "two ", "three"}, texts)
	assert.Equal(t, genai.FinishReasonStop, finish)
	assert.Equal(t, 1, s.RequestsFor(testModel))
	assert.True(t, s.Log()[0].Stream)

	// The same reply, not streamed, is joined.
	resp, err := generate(t, c, "hi")
	require.NoError(t, err)
	assert.Equal(t, "one two three", resp.Text())
	assert.Equal(t, 2, s.RequestsFor(testModel))
}

func TestFailures(t *testing.T) {
	tests := []struct {
		name        string
		fail        geminifake.Failure
		wantCode    int
		wantStatus  string
		wantRetry   time.Duration
		wantHeader  string
		wantClass   classify.Class
		wantVerdict classify.Verdict
	}{
		{name: "503", fail: geminifake.Failure{Code: 503}, wantCode: 503, wantStatus: "UNAVAILABLE",
			wantClass: classify.ClassHTTP5xx, wantVerdict: classify.Counts},
		{name: "429 with RetryInfo", fail: geminifake.Failure{Code: 429, RetryDelay: 40 * time.Second},
			wantCode: 429, wantStatus: "RESOURCE_EXHAUSTED", wantRetry: 40 * time.Second,
			wantClass: classify.ClassHTTP429, wantVerdict: classify.Counts},
		{name: "429 with Retry-After", fail: geminifake.Failure{Code: 429, RetryAfter: "12"},
			wantCode: 429, wantStatus: "RESOURCE_EXHAUSTED", wantHeader: "12",
			wantClass: classify.ClassHTTP429, wantVerdict: classify.Counts},
		{name: "400", fail: geminifake.Failure{Code: 400, Message: "bad schema"}, wantCode: 400,
			wantStatus: "INVALID_ARGUMENT", wantClass: classify.ClassInvalidArgument, wantVerdict: classify.Healthy},
		{name: "explicit status", fail: geminifake.Failure{Code: 400, Status: "FAILED_PRECONDITION"}, wantCode: 400,
			wantStatus: "FAILED_PRECONDITION", wantClass: classify.ClassInvalidArgument, wantVerdict: classify.Healthy},
		{name: "504", fail: geminifake.Failure{Code: 504}, wantCode: 504, wantStatus: "DEADLINE_EXCEEDED",
			wantClass: classify.ClassTimeout, wantVerdict: classify.Counts},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := geminifake.Start(t, geminifake.Config{})
			require.NoError(t, s.Fail(tt.fail))
			var header string
			var mu sync.Mutex
			c := client(t, s, func(rt http.RoundTripper) http.RoundTripper {
				return roundTripFunc(func(r *http.Request) (*http.Response, error) {
					resp, err := rt.RoundTrip(r)
					if resp != nil {
						mu.Lock()
						header = resp.Header.Get("Retry-After")
						mu.Unlock()
					}
					return resp, err
				})
			})
			for _, streaming := range []bool{false, true} {
				var err error
				if streaming {
					_, _, err = stream(t.Context(), c)
				} else {
					_, err = generate(t, c, "hi")
				}
				var apiErr genai.APIError
				require.ErrorAs(t, err, &apiErr)
				assert.Equal(t, tt.wantCode, apiErr.Code)
				assert.Equal(t, tt.wantStatus, apiErr.Status)
				d, _ := classify.RetryInfoDelay(apiErr.Details)
				assert.Equal(t, tt.wantRetry, d)
				got := classify.Classify(classify.Input{Err: err})
				assert.Equal(t, tt.wantClass, got.Class)
				assert.Equal(t, tt.wantVerdict, got.Verdict)
				mu.Lock()
				assert.Equal(t, tt.wantHeader, header)
				mu.Unlock()
			}
			assert.Equal(t, 2, s.RequestsFor(testModel))

			s.Recover()
			_, err := generate(t, c, "hi")
			require.NoError(t, err)
			assert.Equal(t, 3, s.RequestsFor(testModel))
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestStreamFailsAfterChunks(t *testing.T) {
	tests := []struct {
		name      string
		fail      geminifake.Failure
		wantTexts []string
		wantAPI   bool
	}{
		{name: "in-band error after two chunks", fail: geminifake.Failure{Code: 503, AfterChunks: 2},
			wantTexts: []string{"a", "b"}, wantAPI: true},
		{name: "cut connection after one chunk", fail: geminifake.Failure{Code: 503, AfterChunks: 1, Abort: true},
			wantTexts: []string{"a"}},
		{name: "count above chunks sends them all", fail: geminifake.Failure{Code: 500, AfterChunks: 9},
			wantTexts: []string{"a", "b", "c"}, wantAPI: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := geminifake.Start(t, geminifake.Config{})
			f := tt.fail
			require.NoError(t, s.Enqueue(geminifake.Reply{Chunks: []string{"a", "b", "c"}, Fail: &f}))
			texts, finish, err := stream(t.Context(), client(t, s, nil))
			require.Error(t, err)
			assert.Equal(t, tt.wantTexts, texts)
			assert.Empty(t, finish, "a broken stream never finishes")
			var apiErr genai.APIError
			assert.Equal(t, tt.wantAPI, errors.As(err, &apiErr), "error %v", err)
			if !tt.wantAPI {
				assert.Equal(t, classify.ClassTransport, classify.Classify(classify.Input{Err: err}).Class, "error %v", err)
			}
			assert.Equal(t, 1, s.RequestsFor(testModel))
		})
	}
}

func TestAbortWholeAnswer(t *testing.T) {
	s := geminifake.Start(t, geminifake.Config{})
	require.NoError(t, s.Enqueue(geminifake.Reply{Fail: &geminifake.Failure{Code: 503, Abort: true}}))
	_, err := generate(t, client(t, s, nil), "hi")
	require.Error(t, err)
	assert.Equal(t, classify.Counts, classify.Classify(classify.Input{Err: err}).Verdict, "error %v", err)
}

func TestSafetyBlocks(t *testing.T) {
	tests := []struct {
		name       string
		reply      geminifake.Reply
		wantFinish genai.FinishReason
		wantBlock  genai.BlockedReason
	}{
		{name: "candidate filtered", reply: geminifake.Reply{FinishReason: genai.FinishReasonSafety},
			wantFinish: genai.FinishReasonSafety},
		{name: "prompt blocked", reply: geminifake.Reply{BlockReason: genai.BlockedReasonSafety},
			wantBlock: genai.BlockedReasonSafety},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := geminifake.Start(t, geminifake.Config{Reply: tt.reply})
			c := client(t, s, nil)
			for _, streaming := range []bool{false, true} {
				var resp *genai.GenerateContentResponse
				if streaming {
					for r, err := range c.Models.GenerateContentStream(t.Context(), testModel, genai.Text("hi"), nil) {
						require.NoError(t, err)
						resp = r
					}
				} else {
					var err error
					resp, err = generate(t, c, "hi")
					require.NoError(t, err)
				}
				require.NotNil(t, resp)
				if tt.wantBlock != "" {
					assert.Empty(t, resp.Candidates)
					require.NotNil(t, resp.PromptFeedback)
					assert.Equal(t, tt.wantBlock, resp.PromptFeedback.BlockReason)
					continue
				}
				require.Len(t, resp.Candidates, 1)
				assert.Nil(t, resp.Candidates[0].Content)
				assert.Equal(t, tt.wantFinish, resp.Candidates[0].FinishReason)
			}
		})
	}
}

// An empty answer is "{}" on the wire, streamed or not: no candidates, no prompt
// feedback, nothing a client could mistake for a block.
func TestEmptyAnswer(t *testing.T) {
	s := geminifake.Start(t, geminifake.Config{Reply: geminifake.Reply{Empty: true}})
	for _, streaming := range []bool{false, true} {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost,
			s.URL()+"/v1beta/models/"+testModel+":generateContent", strings.NewReader(`{"contents":[]}`))
		require.NoError(t, err)
		if streaming {
			req.URL.Path = "/v1beta/models/" + testModel + ":streamGenerateContent"
			req.URL.RawQuery = "alt=sse"
		}
		req.Header.Set("x-goog-api-key", "k")
		resp, err := s.Client().Do(req)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		want := "{}"
		if streaming {
			want = "data: {}\r\n\r\n"
		}
		assert.Equal(t, want, string(body), "streaming=%v", streaming)
	}
	r, err := generate(t, client(t, s, nil), "hi")
	require.NoError(t, err)
	assert.Empty(t, r.Candidates)
	assert.Nil(t, r.PromptFeedback)
}

func TestFunctionCallParts(t *testing.T) {
	s := geminifake.Start(t, geminifake.Config{Reply: geminifake.Reply{Parts: []*genai.Part{
		genai.NewPartFromFunctionCall("lookup", map[string]any{"id": "42"}),
	}}})
	resp, err := generate(t, client(t, s, nil), "hi")
	require.NoError(t, err)
	calls := resp.FunctionCalls()
	require.Len(t, calls, 1)
	assert.Equal(t, "lookup", calls[0].Name)
	assert.Equal(t, map[string]any{"id": "42"}, calls[0].Args)
}

func TestUnknownPathIsCountedButNotAsGenerate(t *testing.T) {
	s := geminifake.Start(t, geminifake.Config{})
	resp, err := s.Client().Get(s.URL() + "/v1beta/models")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Contains(t, string(body), `"status":"NOT_FOUND"`)

	resp, err = s.Client().Post(s.URL()+"/v1beta/models/"+testModel+":generateContent", "application/json", strings.NewReader("{"))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "invalid JSON")

	assert.Equal(t, 2, s.Requests())
	assert.Equal(t, 1, s.RequestsFor(testModel), "the malformed generate request still reached the model")
}

func TestMissingAPIKeyIsRefused(t *testing.T) {
	s := geminifake.Start(t, geminifake.Config{})
	resp, err := s.Client().Post(s.URL()+"/v1beta/models/"+testModel+":generateContent", "application/json",
		strings.NewReader(`{"contents":[]}`))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
}

func TestInvalidScriptsNameTheField(t *testing.T) {
	tests := []struct {
		name    string
		do      func(*geminifake.Server) error
		wantErr string
	}{
		{name: "fail code", do: func(s *geminifake.Server) error { return s.Fail(geminifake.Failure{Code: 200}) },
			wantErr: "Failure.Fail.Code = 200"},
		{name: "negative chunks", do: func(s *geminifake.Server) error {
			return s.Fail(geminifake.Failure{Code: 503, AfterChunks: -1})
		}, wantErr: "AfterChunks = -1"},
		{name: "negative delay", do: func(s *geminifake.Server) error {
			return s.SetReply(geminifake.Reply{Fail: &geminifake.Failure{Code: 429, RetryDelay: -time.Second}})
		}, wantErr: "Reply.Fail.RetryDelay = -1s"},
		{name: "header injection", do: func(s *geminifake.Server) error {
			return s.Enqueue(geminifake.Reply{}, geminifake.Reply{Fail: &geminifake.Failure{Code: 429, RetryAfter: "1\r\nX: y"}})
		}, wantErr: "replies[1].Fail.RetryAfter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := geminifake.Start(t, geminifake.Config{})
			err := tt.do(s)
			require.ErrorIs(t, err, geminifake.ErrInvalid)
			assert.Contains(t, err.Error(), tt.wantErr)
		})
	}
	_, err := geminifake.New(geminifake.Config{Reply: geminifake.Reply{Fail: &geminifake.Failure{Code: 99}}})
	require.ErrorIs(t, err, geminifake.ErrInvalid)
	assert.Contains(t, err.Error(), "Config.Reply.Fail.Code = 99")
}

func TestQueuedRepliesGoBeforeTheFailure(t *testing.T) {
	s := geminifake.Start(t, geminifake.Config{Reply: geminifake.Reply{Text: "default"}})
	c := client(t, s, nil)
	require.NoError(t, s.Fail(geminifake.Failure{Code: 503}))
	require.NoError(t, s.Enqueue(geminifake.Reply{Text: "first"}))

	resp, err := generate(t, c, "hi")
	require.NoError(t, err)
	assert.Equal(t, "first", resp.Text())
	_, err = generate(t, c, "hi")
	require.Error(t, err)
	s.Recover()
	resp, err = generate(t, c, "hi")
	require.NoError(t, err)
	assert.Equal(t, "default", resp.Text())
}
