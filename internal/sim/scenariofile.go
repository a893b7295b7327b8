package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	yaml "go.yaml.in/yaml/v3"
)

// PositionError places a problem at a line and column of a scenario file (1-based; a
// column of 0 means the parser gave only the line). It unwraps to the problem, often a
// *ConfigError naming the field by its path in the file ("policy.window").
type PositionError struct {
	Line, Column int
	Err          error
}

func (e *PositionError) Error() string {
	msg := e.Err.Error()
	if ce, ok := errors.AsType[*ConfigError](e.Err); ok {
		msg = fmt.Sprintf("%s = %v: %s", ce.Field, ce.Value, ce.Problem) // the position says where; no package
	}
	if e.Column == 0 {
		return fmt.Sprintf("line %d: %s", e.Line, msg)
	}
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, msg)
}

func (e *PositionError) Unwrap() error { return e.Err }

// decodeScenarioFile reads data into f, key by key, so that every problem names the key's
// path in the file and its position: malformed JSON or YAML, an unknown key, a value of
// the wrong kind. It returns the document's root mapping (nil for an empty file), where
// later problems are placed with at.
func decodeScenarioFile(data []byte, f *scenarioFile) (*yaml.Node, error) {
	if t := bytes.TrimSpace(data); len(t) > 0 && (t[0] == '{' || t[0] == '[') {
		if err := jsonSyntax(data); err != nil {
			return nil, err
		}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, yamlSyntax(err)
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return nil, nil
	}
	doc := root.Content[0]
	if doc.Kind == yaml.ScalarNode && doc.Tag == "!!null" {
		return nil, nil
	}
	return doc, decodeMapping(doc, "", reflect.ValueOf(f).Elem())
}

// decodeMapping decodes a mapping node into the struct v by its yaml tags.
func decodeMapping(n *yaml.Node, prefix string, v reflect.Value) error {
	if n.Kind != yaml.MappingNode {
		what := "the scenario"
		if prefix != "" {
			what = strings.TrimSuffix(prefix, ".")
		}
		return &PositionError{n.Line, n.Column, fmt.Errorf("%s: want a mapping of keys to values", what)}
	}
	keys := map[string]int{}
	var names []string
	for i := range v.NumField() {
		tag, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ",")
		keys[tag] = i
		names = append(names, tag)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		idx, ok := keys[k.Value]
		if !ok {
			return &PositionError{k.Line, k.Column, fmt.Errorf("unknown key %s%s%s", prefix, k.Value, suggest(k.Value, names))}
		}
		field := v.Field(idx)
		path := prefix + k.Value
		if field.Kind() == reflect.Struct {
			if err := decodeMapping(val, path+".", field); err != nil {
				return err
			}
			continue
		}
		if err := val.Decode(field.Addr().Interface()); err != nil {
			return &PositionError{val.Line, val.Column, fmt.Errorf("%s = %s: want %s", path, shown(val), kindWord(field.Type()))}
		}
	}
	return nil
}

// kindWord names what a field takes, in a user's words.
func kindWord(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t.Name() == "IntOrOff":
		return "a whole number or off"
	case t.Kind() == reflect.Int, t.Kind() == reflect.Uint64:
		return "a whole number"
	case t.Kind() == reflect.Float64:
		return "a number"
	case t.Kind() == reflect.Slice:
		return "a list"
	default:
		return "a string"
	}
}

func shown(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		return strconv.Quote(n.Value)
	case yaml.SequenceNode:
		return "a list"
	default:
		return "a mapping"
	}
}

// suggest offers the known key closest to a misspelt one.
func suggest(key string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := editDistance(key, n); d < bestD {
			best, bestD = n, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// jsonSyntax reports malformed JSON at its line and column: encoding/json knows the
// offset, which the YAML parser that reads the file afterwards does not report.
func jsonSyntax(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	var v any
	err := dec.Decode(&v)
	if err == nil {
		if off := dec.InputOffset(); len(bytes.TrimSpace(data[off:])) > 0 {
			line, col := lineCol(data, int(off)+leadingSpace(data[off:]))
			return &PositionError{line, col, errors.New("unexpected text after the JSON object")}
		}
		return nil
	}
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		line, col := lineCol(data, int(se.Offset)-1)
		return &PositionError{line, col, fmt.Errorf("malformed JSON: %s", se.Error())}
	case errors.Is(err, io.ErrUnexpectedEOF):
		line, col := lineCol(data, len(bytes.TrimRightFunc(data, unicode.IsSpace)))
		return &PositionError{line, col, errors.New("malformed JSON: the file ends inside an object or a list")}
	}
	return nil // a type mismatch: the key-by-key decoding reports it with its path
}

func leadingSpace(b []byte) int { return len(b) - len(bytes.TrimLeftFunc(b, unicode.IsSpace)) }

// lineCol is the 1-based line and column of byte offset off.
func lineCol(data []byte, off int) (int, int) {
	off = min(max(off, 0), len(data))
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - bytes.LastIndexByte(data[:off], '\n')
	return line, col
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlSyntax rewrites a YAML parser error without its package prefix, with its line.
func yamlSyntax(err error) error {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &PositionError{Line: line, Err: fmt.Errorf("malformed YAML: %s", m[2])}
	}
	return fmt.Errorf("malformed YAML: %s", strings.TrimPrefix(msg, "yaml: "))
}

// at places err at the value of its field in the file, when it is a *ConfigError whose
// field ("policy.window", "strategies[1]") is there.
func at(doc *yaml.Node, err error) error {
	ce, ok := errors.AsType[*ConfigError](err)
	if !ok || doc == nil {
		return err
	}
	n := doc
	for part := range strings.SplitSeq(ce.Field, ".") {
		name, index, _ := strings.Cut(part, "[")
		n = lookup(n, name)
		if n == nil {
			return err
		}
		if index != "" {
			i, convErr := strconv.Atoi(strings.TrimSuffix(index, "]"))
			if convErr != nil || n.Kind != yaml.SequenceNode || i >= len(n.Content) {
				return err
			}
			n = n.Content[i]
		}
	}
	return &PositionError{n.Line, n.Column, err}
}

func lookup(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
