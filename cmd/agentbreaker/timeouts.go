package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/agentbreaker/agentbreaker/dependencymap/depfile"
)

// timeoutsFile is the layered timeouts of an agent's tools, for lint -timeouts:
//
//	turn: 30s        # the whole-turn budget (tooltimeout.Turn); optional
//	sub_agent: 10s   # the budget of the sub-agent calling the tools; optional
//	tools:
//	  enrich: {timeout: 5s, attempts: 3, backoff: 1.5s, sub_agent: 12s}
//
// A tool's sub_agent wins over the file's.
type timeoutsFile struct {
	path     string
	turn     time.Duration
	subAgent time.Duration
	tools    map[string]toolTimeouts
	order    []string // the tools in the file's order
	problems []depfile.Problem
	lines    map[string][2]int // path -> line, column
}

type toolTimeouts struct {
	timeout, backoff, subAgent time.Duration
	attempts                   int
}

var timeoutKeys = []string{"turn", "sub_agent", "tools"}
var toolKeys = []string{"timeout", "attempts", "backoff", "sub_agent"}

// readTimeouts reads and checks a timeouts file completely: every problem is in
// problems, with its line and column. The error is for a file that cannot be read.
func readTimeouts(path string) (*timeoutsFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	tf := &timeoutsFile{path: path, tools: map[string]toolTimeouts{}, lines: map[string][2]int{}}
	isJSON := strings.EqualFold(filepath.Ext(path), ".json")
	if isJSON {
		if p, ok := jsonSyntax(data); !ok {
			tf.problems = append(tf.problems, p)
			return tf, nil
		}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		tf.problems = append(tf.problems, yamlProblem(err))
		return tf, nil
	}
	if len(doc.Content) == 0 {
		tf.add("", &doc, nil, "the file is empty: want turn, sub_agent or tools")
		return tf, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		tf.add("", root, nil, "want a mapping of turn, sub_agent and tools at the top of the file")
		return tf, nil
	}
	tf.each(root, "", timeoutKeys, func(key string, k, v *yaml.Node) {
		switch key {
		case "turn":
			tf.turn = tf.duration("turn", v, false)
		case "sub_agent":
			tf.subAgent = tf.duration("sub_agent", v, false)
		case "tools":
			if v.Kind != yaml.MappingNode {
				tf.add("tools", v, nil, "want a mapping of tool names to {timeout, attempts, backoff, sub_agent}")
				return
			}
			for i := 0; i+1 < len(v.Content); i += 2 {
				name, spec := v.Content[i], v.Content[i+1]
				p := "tools." + name.Value
				tf.lines[p] = [2]int{name.Line, name.Column}
				if _, dup := tf.tools[name.Value]; dup {
					tf.add(p, name, nil, "listed twice")
					continue
				}
				tf.tools[name.Value] = tf.tool(p, spec)
				tf.order = append(tf.order, name.Value)
			}
		}
	})
	return tf, nil
}

// each calls f for each known key of mapping n, and records unknown and repeated keys.
func (tf *timeoutsFile) each(n *yaml.Node, path string, known []string, f func(key string, k, v *yaml.Node)) {
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		p := k.Value
		if path != "" {
			p = path + "." + k.Value
		}
		tf.lines[p] = [2]int{k.Line, k.Column}
		switch {
		case seen[k.Value]:
			tf.add(p, k, nil, "set twice")
		case !contains(known, k.Value):
			tf.add(p, k, nil, "unknown key; the keys are "+strings.Join(known, ", "))
		default:
			seen[k.Value] = true
			f(k.Value, k, v)
		}
	}
}

func (tf *timeoutsFile) tool(path string, n *yaml.Node) toolTimeouts {
	var tt toolTimeouts
	if n.Kind != yaml.MappingNode {
		tf.add(path, n, scalar(n), "want a mapping with timeout (required), attempts, backoff and sub_agent")
		return tt
	}
	hasTimeout := false
	tf.each(n, path, toolKeys, func(key string, k, v *yaml.Node) {
		switch key {
		case "timeout":
			hasTimeout = true
			tt.timeout = tf.duration(path+".timeout", v, true)
		case "backoff":
			tt.backoff = tf.duration(path+".backoff", v, false)
		case "sub_agent":
			tt.subAgent = tf.duration(path+".sub_agent", v, false)
		case "attempts":
			n, err := strconv.Atoi(v.Value)
			if v.Kind != yaml.ScalarNode || err != nil || n < 1 {
				tf.add(path+".attempts", v, scalar(v), "want a whole number of at least 1 (retries included)")
				return
			}
			tt.attempts = n
		}
	})
	if !hasTimeout {
		tf.add(path, n, nil, "timeout is missing: every tool needs its per-attempt timeout")
	}
	return tt
}

// duration parses a duration value; positive when required, else zero or more.
func (tf *timeoutsFile) duration(path string, n *yaml.Node, positive bool) time.Duration {
	d, err := time.ParseDuration(n.Value)
	switch {
	case n.Kind != yaml.ScalarNode || err != nil:
		tf.add(path, n, scalar(n), `want a duration such as "5s"`)
	case positive && d <= 0:
		tf.add(path, n, scalar(n), "must be more than zero")
	case d < 0:
		tf.add(path, n, scalar(n), "must not be negative")
	}
	return d
}

func (tf *timeoutsFile) add(path string, n *yaml.Node, value any, msg string) {
	tf.problems = append(tf.problems, depfile.Problem{Path: path, Line: n.Line, Column: n.Column, Value: value, Message: msg})
}

// position returns where path is in the file (0, 0 when it is not).
func (tf *timeoutsFile) position(path string) (int, int) {
	lc := tf.lines[path]
	return lc[0], lc[1]
}

// raw is a value shown as the file wrote it (a number), unquoted.
type raw string

func (r raw) String() string { return string(r) }

// scalar is a node's value for a message: quoted when the file wrote a string.
func scalar(n *yaml.Node) any {
	if n.Kind != yaml.ScalarNode {
		return nil
	}
	if n.ShortTag() == "!!str" {
		return n.Value
	}
	return raw(n.Value)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// jsonSyntax locates a JSON syntax error by line and column.
func jsonSyntax(data []byte) (depfile.Problem, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var v any
	err := dec.Decode(&v)
	var se *json.SyntaxError
	switch {
	case err == nil:
		if rest := bytes.TrimSpace(data[dec.InputOffset():]); len(rest) > 0 {
			line, col := lineCol(data, int(dec.InputOffset())+bytes.Index(data[dec.InputOffset():], rest[:1]))
			return depfile.Problem{Line: line, Column: col, Message: "unexpected data after the top-level value"}, false
		}
		return depfile.Problem{}, true
	case errors.Is(err, io.EOF):
		return depfile.Problem{Message: "the file is empty: want a JSON object"}, false
	case errors.Is(err, io.ErrUnexpectedEOF):
		line, col := lineCol(data, len(data))
		return depfile.Problem{Line: line, Column: col, Message: "the file ends inside a value: an object, array or string is not closed"}, false
	case errors.As(err, &se):
		line, col := lineCol(data, int(se.Offset)-1)
		return depfile.Problem{Line: line, Column: col, Message: se.Error()}, false
	default:
		return depfile.Problem{Message: err.Error()}, false
	}
}

func lineCol(data []byte, off int) (line, col int) {
	off = max(0, min(off, len(data)))
	before := data[:off]
	return bytes.Count(before, []byte("\n")) + 1, len([]rune(string(before[bytes.LastIndexByte(before, '\n')+1:]))) + 1
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func yamlProblem(err error) depfile.Problem {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		return depfile.Problem{Line: line, Message: m[2]}
	}
	return depfile.Problem{Message: strings.TrimPrefix(err.Error(), "yaml: ")}
}

// describe names a problem's position for messages that point at another file.
func (tf *timeoutsFile) where(path string) string {
	if line, _ := tf.position(path); line > 0 {
		return fmt.Sprintf("%s:%d", tf.path, line)
	}
	return tf.path
}
