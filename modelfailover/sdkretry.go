package modelfailover

import (
	"context"
	"io"
	"iter"
	"net/http"
	"strconv"
	"strings"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/model"
	"google.golang.org/genai"
)

// The failover owns model retries: an attempt that a route's breaker admitted
// sends at most one request, and the next attempt is the next route (or the next
// turn, once the breaker admits the route again). A provider SDK's own retry
// would multiply the load on a failing endpoint and sleep inside the turn,
// ignoring the breaker and the stated delay. So, on every request that belongs
// to an attempt:
//
//   - genai's retries are pinned off on the request itself (HTTPOptions.RetryOptions
//     with one attempt, which overrides the client's);
//   - a failed answer (any status of 400 or more) goes back to the SDK with
//     "X-Should-Retry: false", which openai-go and the other Stainless SDKs obey
//     before any back-off sleep;
//   - a transport error of a Stainless SDK's request (it carries
//     X-Stainless-Retry-Count) goes back as a local answer the SDK does not retry,
//     and the attempt is judged on the real error;
//   - any second request of an attempt whose first one failed is refused in the
//     process, answered locally and counted ([Stats].RefusedRetries).

// Headers of the local answer, and the header Stainless SDKs read.
const (
	headerShouldRetry = "X-Should-Retry"
	headerLocal       = "X-Agentbreaker-Local"
	headerStainless   = "X-Stainless-Retry-Count"
)

// statusLocal is the status of a local answer: not one any SDK retries (408, 409,
// 429, 5xx), and the one proxies use for a request the client side ended.
const statusLocal = 499

// Reasons a transport answers a request locally (the X-Agentbreaker-Local header).
const (
	localRetryRefused = "sdk_retry_refused"
	localSendFailed   = "send_failed"
)

// localAnswer is the response a transport gives instead of sending req (a
// refused SDK retry) or instead of a transport error: a 499 that no SDK retries,
// in the error format of the SDK that sent req. The error it becomes names
// agentbreaker, never the dependency's words.
func localAnswer(req *http.Request, reason string) *http.Response {
	msg := "agentbreaker: the SDK's retry of a failed model attempt was refused in the process; the failover owns retries"
	if reason == localSendFailed {
		msg = "agentbreaker: the model request failed before an answer and is not retried by the SDK; the failover owns retries"
	}
	var body string
	if req.Header.Get(headerStainless) != "" {
		body = `{"error":{"message":"` + msg + `","type":"agentbreaker_local","code":"` + reason + `"}}`
	} else {
		body = `{"error":{"code":` + strconv.Itoa(statusLocal) + `,"message":"` + msg + `","status":"CANCELLED"}}`
	}
	return &http.Response{
		Status:     strconv.Itoa(statusLocal) + " Ended By Agentbreaker",
		StatusCode: statusLocal,
		Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{
			"Content-Type":    {"application/json"},
			headerShouldRetry: {"false"},
			headerLocal:       {reason},
		},
		Body:          noBody(body),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

// pinGenaiRetries returns h with genai's retries turned off for this request: a
// request-level RetryOptions replaces the client's.
func pinGenaiRetries(h genai.HTTPOptions) genai.HTTPOptions {
	one := int32(1)
	h.RetryOptions = &genai.HTTPRetryOptions{Attempts: &one}
	return h
}

// callKeyKey carries an adk model call's key in a context (see [CallScoped]).
type callKeyKey struct{}

// adkCallKey returns the key of the adk model call ctx belongs to: the one
// [CallScoped] put in it, or ctx's own when it is adk's context of a model call
// (a client that passes the model call's context to its requests unchanged, as
// openai-go does without a request timeout).
func adkCallKey(ctx context.Context) (string, bool) {
	if k, ok := ctx.Value(callKeyKey{}).(string); ok {
		return k, true
	}
	if ic, ok := ctx.(agent.InvocationContext); ok && ic.Agent() != nil {
		return ic.InvocationID() + "\x00" + ic.Branch() + "\x00" + ic.Agent().Name(), true
	}
	return "", false
}

// CallScoped wraps the agent's own model, for agents that use a Failover's
// callbacks, so that every HTTP request of a model call carries the call's
// identity in its context, whatever the client adds around that context (a
// request timeout, http.Client.Timeout). [Failover.Transport] reads it to find
// the call's attempt. A model whose client passes adk's context to its requests
// unchanged (openai-go and genai without timeouts) needs no wrapping; wrapping
// costs one context value per call. Name and the rest pass through.
func CallScoped(llm model.LLM) model.LLM {
	if llm == nil {
		return nil
	}
	return &callScoped{LLM: llm}
}

type callScoped struct{ model.LLM }

func (c *callScoped) GenerateContent(ctx context.Context, req *model.LLMRequest, stream bool) iter.Seq2[*model.LLMResponse, error] {
	if ic, ok := ctx.(agent.InvocationContext); ok && ic.Agent() != nil {
		key := ic.InvocationID() + "\x00" + ic.Branch() + "\x00" + ic.Agent().Name()
		ctx = ic.WithContext(context.WithValue(ic, callKeyKey{}, key))
	}
	return c.LLM.GenerateContent(ctx, req, stream)
}

// GetGoogleLLMVariant passes the wrapped model's backend on, which adk reads.
func (c *callScoped) GetGoogleLLMVariant() genai.Backend {
	if v, ok := c.LLM.(interface{ GetGoogleLLMVariant() genai.Backend }); ok {
		return v.GetGoogleLLMVariant()
	}
	return genai.BackendUnspecified
}

func noBody(s string) io.ReadCloser { return io.NopCloser(strings.NewReader(s)) }
