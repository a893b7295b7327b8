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
	Charge = "charge_card" // mutating: charges a card
	Order  = "get_order"   // read-only: looks an order up
)

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
	calls   map[string]int // tool calls the handlers ran, by tool
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
				n := s.charges.Add(1)
				return nil, map[string]any{"charged": true, "charge_id": fmt.Sprintf("ch_%d", n), "amount": in.Amount}, nil
			}
			return res, nil, err
		})
	mcp.AddTool(s.MCP, &mcp.Tool{Name: Order, Description: "Looks an order up."},
		func(ctx context.Context, req *mcp.CallToolRequest, in orderArgs) (*mcp.CallToolResult, any, error) {
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
