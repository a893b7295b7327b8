package mcptest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool names of the fixture.
const (
	Charge = "charge_card"   // mutating: charges a card
	Order  = "get_order"     // read-only: looks an order up
	Status = "charge_status" // read-only, added by AddStatus: was a charge applied?
)

// KeyMeta is the _meta key under which agentbreaker's MCP guard sends a mutation's
// idempotency key, written out as a server author would (mcpguard.IdempotencyKeyMeta).
const KeyMeta = "io.github.agentbreaker/idempotency-key"

// Answer is what a tool does with one call: the result it returns, or an error (which
// the SDK sends as isError), or it blocks until the call's context ends (Hang).
type Answer func(ctx context.Context, args map[string]any) (*mcp.CallToolResult, error)

// OK answers with the tool's normal result: structured content for charge_card,
// text for get_order.
func OK() Answer { return nil }

// IsError answers with an isError result carrying text.
func IsError(text string) Answer {
	return func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
	}
}

// Structured answers with a successful result whose structured content is v.
func Structured(v map[string]any) Answer {
	return func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{StructuredContent: v, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(v)}}}, nil
	}
}

// Server is the fixture's MCP server. It is safe for concurrent use.
type Server struct {
	MCP *mcp.Server

	mu      sync.Mutex
	answers map[string]Answer
	calls   map[string]int              // tool calls the handlers ran, by tool
	metas   map[string][]map[string]any // the _meta of each tools/call received, by tool
	applied map[string]bool             // idempotency keys of the charges applied
	charges atomic.Int64
	confirm atomic.Bool   // charge_card asks the client to confirm first
	release chan struct{} // closed to end every hanging call
	closed  bool
}

// NewServer returns the server with both tools answering OK.
func NewServer() *Server {
	s := &Server{
		MCP:     mcp.NewServer(&mcp.Implementation{Name: "payments", Version: "v1"}, nil),
		answers: map[string]Answer{},
		calls:   map[string]int{},
		metas:   map[string][]map[string]any{},
		applied: map[string]bool{},
		release: make(chan struct{}),
	}
	type chargeArgs struct {
		Card   string  `json:"card" jsonschema:"the card to charge"`
		Amount float64 `json:"amount" jsonschema:"the amount in euros"`
	}
	type orderArgs struct {
		OrderID string `json:"order_id" jsonschema:"the order's ID"`
	}
	mcp.AddTool(s.MCP, &mcp.Tool{Name: Charge, Description: "Charges a card."},
		func(ctx context.Context, req *mcp.CallToolRequest, in chargeArgs) (*mcp.CallToolResult, any, error) {
			s.RecordMeta(Charge, req.Params.Meta)
			if s.confirm.Load() && len(req.Params.InputResponses) == 0 {
				s.mu.Lock()
				s.calls[Charge]++
				s.mu.Unlock()
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"confirm": &mcp.ElicitParams{
					Message:         fmt.Sprintf("Charge %.2f EUR to card %s?", in.Amount, in.Card),
					RequestedSchema: &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"ok": {Type: "boolean"}}},
				}}}, nil, nil
			}
			res, err := s.run(ctx, Charge, map[string]any{"card": in.Card, "amount": in.Amount})
			if res == nil && err == nil {
				n := s.Apply(req.Params.Meta)
				return nil, map[string]any{"charged": true, "charge_id": fmt.Sprintf("ch_%d", n), "amount": in.Amount}, nil
			}
			return res, nil, err
		})
	mcp.AddTool(s.MCP, &mcp.Tool{Name: Order, Description: "Looks an order up."},
		func(ctx context.Context, req *mcp.CallToolRequest, in orderArgs) (*mcp.CallToolResult, any, error) {
			s.RecordMeta(Order, req.Params.Meta)
			res, err := s.run(ctx, Order, map[string]any{"order_id": in.OrderID})
			if res == nil && err == nil {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "order " + in.OrderID + ": shipped"}}}, nil, nil
			}
			return res, nil, err
		})
	return s
}

// AddRefund adds a third tool, refund, as a server whose tool list changes does.
func (s *Server) AddRefund() {
	type refundArgs struct {
		ChargeID string `json:"charge_id" jsonschema:"the charge to refund"`
	}
	mcp.AddTool(s.MCP, &mcp.Tool{Name: "refund", Description: "Refunds a charge."},
		func(ctx context.Context, req *mcp.CallToolRequest, in refundArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "refunded"}}}, nil, nil
		})
}

// AddStatus adds a read-only tool, charge_status, that answers whether a charge with
// an idempotency key was applied: structured content {"status": "applied"} or
// {"status": "not_applied"}, as a payment server that keeps the keys of what it applied
// would.
func (s *Server) AddStatus() {
	type statusArgs struct {
		Key string `json:"idempotency_key" jsonschema:"the idempotency key the charge was sent with"`
	}
	mcp.AddTool(s.MCP, &mcp.Tool{Name: Status, Description: "Tells whether a charge was applied."},
		func(ctx context.Context, req *mcp.CallToolRequest, in statusArgs) (*mcp.CallToolResult, any, error) {
			s.RecordMeta(Status, req.Params.Meta)
			if res, err := s.run(ctx, Status, map[string]any{"idempotency_key": in.Key}); res != nil || err != nil {
				return res, nil, err
			}
			s.mu.Lock()
			applied := s.applied[in.Key]
			s.mu.Unlock()
			status := "not_applied"
			if applied {
				status = "applied"
			}
			return nil, map[string]any{"status": status}, nil
		})
}

// RecordMeta notes the _meta of a tools/call of tool.
func (s *Server) RecordMeta(tool string, meta map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.metas[tool] = append(s.metas[tool], meta)
}

// Apply applies a charge sent with meta: it counts, and its idempotency key (if any)
// is remembered as applied. It returns the number of charges applied so far.
func (s *Server) Apply(meta map[string]any) int64 {
	n := s.charges.Add(1)
	if k, ok := meta[KeyMeta].(string); ok {
		s.mu.Lock()
		s.applied[k] = true
		s.mu.Unlock()
	}
	return n
}

// Keys returns the idempotency key each tools/call of tool carried in its _meta, in
// the order received ("" for a call without one).
func (s *Server) Keys(tool string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, m := range s.metas[tool] {
		k, _ := m[KeyMeta].(string)
		out = append(out, k)
	}
	return out
}

// ConfirmCharges makes charge_card ask the client to confirm each charge before it
// applies it: its first answer is "input required" (an elicitation, SEP-2322), and the
// SDK's client sends the call again with the answer.
func (s *Server) ConfirmCharges() { s.confirm.Store(true) }

// Set scripts tool's answer for the calls from now on; OK() restores the normal one.
func (s *Server) Set(tool string, a Answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers[tool] = a
}

// Hang makes tool's calls block until their context ends or the server is released.
func (s *Server) Hang(tool string) {
	s.Set(tool, func(ctx context.Context, _ map[string]any) (*mcp.CallToolResult, error) {
		s.mu.Lock()
		release := s.release
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-release:
			return nil, fmt.Errorf("released")
		}
	})
}

// Release ends every hanging call. It is idempotent.
func (s *Server) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		close(s.release)
		s.closed = true
	}
}

// Calls returns how many calls of tool the server's handlers ran.
func (s *Server) Calls(tool string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[tool]
}

// Charges returns how many charges charge_card applied with its normal answer.
func (s *Server) Charges() int { return int(s.charges.Load()) }

func (s *Server) run(ctx context.Context, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	s.mu.Lock()
	s.calls[tool]++
	a := s.answers[tool]
	s.mu.Unlock()
	if a == nil {
		return nil, nil
	}
	return a(ctx, args)
}
