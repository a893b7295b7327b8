package mcptest

import (
	"context"
	"fmt"
	"os"
	"os/exec"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Environment of a stdio child.
const (
	envChild = "AGENTBREAKER_MCPTEST_STDIO" // the mode; set: this process is the server
	envLog   = "AGENTBREAKER_MCPTEST_CALLS" // a file the child appends one line to per call
)

// Stdio modes.
const (
	StdioOK      = "ok"       // both tools answer normally
	StdioExitOn  = "exit"     // charge_card is read, logged and the process exits: EOF
	StdioIsError = "is_error" // charge_card answers isError "card_declined: ..."
)

// ServeStdioIfChild serves the fixture over stdin/stdout and exits when this process
// is a child started by Command; otherwise it returns at once. Call it first in
// TestMain.
func ServeStdioIfChild() {
	mode := os.Getenv(envChild)
	if mode == "" {
		return
	}
	s := NewServer()
	log := os.Getenv(envLog)
	logCall := func() {
		f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err == nil {
			fmt.Fprintln(f, "call")
			f.Close()
		}
	}
	switch mode {
	case StdioExitOn:
		s.Set(Charge, func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
			logCall()
			os.Exit(0) // the call was read and applied; the answer never leaves
			return nil, nil
		})
	case StdioIsError:
		s.Set(Charge, func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
			logCall()
			return IsError("card_declined: The card was declined.")(nil, nil)
		})
	default:
		s.Set(Charge, func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
			logCall()
			return Structured(map[string]any{"charged": true})(nil, nil)
		})
	}
	err := s.MCP.Run(context.Background(), &mcp.StdioTransport{})
	code := 0
	if err != nil {
		code = 1
	}
	os.Exit(code)
}

// Command returns the test binary run as a stdio MCP server in mode, appending a line
// to callLog for each charge_card call it receives.
func Command(mode, callLog string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+mode, envLog+"="+callLog)
	return cmd
}

// LoggedCalls returns how many calls a child logged to callLog.
func LoggedCalls(callLog string) int {
	data, err := os.ReadFile(callLog)
	if err != nil {
		return 0
	}
	n := 0
	for _, b := range data {
		if b == '\n' {
			n++
		}
	}
	return n
}
