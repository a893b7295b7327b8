package transparency_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// IDs and times differ from run to run; everything else must not. normalizer
// replaces each ID with "<id N>", N counting IDs in order of first appearance in one
// run's record (so "the same ID as the call it answers" is still compared), and
// every timestamp with "<time>".
type normalizer struct {
	ids map[string]string
}

var (
	// A UUID (adk-go's events, invocations, function calls, sessions; a2a-go's tasks,
	// contexts and messages), with or without its dashes.
	uuidRE = regexp.MustCompile(`[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}`)
	timeRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$`)
	// hostRE is the local address of a test server (its port differs per run).
	hostRE = regexp.MustCompile(`127\.0\.0\.1:\d+`)
)

// timeKeys hold times as numbers or strings.
var timeKeys = map[string]bool{"Timestamp": true, "timestamp": true, "LastUpdateTime": true, "last_update_time": true}

func newNormalizer() *normalizer { return &normalizer{ids: map[string]string{}} }

// value marshals v to JSON and returns it normalised, as generic JSON values.
func (n *normalizer) value(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("unmarshalable %T: %v", v, err)
	}
	var g any
	if err := json.Unmarshal(b, &g); err != nil {
		return fmt.Sprintf("unmarshalable %T: %v", v, err)
	}
	return n.walk(g)
}

func (n *normalizer) walk(v any) any {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys) // IDs are numbered in a fixed order
		out := make(map[string]any, len(x))
		for _, k := range keys {
			if timeKeys[k] {
				out[k] = "<time>"
				continue
			}
			out[n.str(k)] = n.walk(x[k])
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = n.walk(e)
		}
		return out
	case string:
		return n.str(x)
	}
	return v
}

func (n *normalizer) str(s string) string {
	if timeRE.MatchString(s) {
		return "<time>"
	}
	s = hostRE.ReplaceAllString(s, "<host>")
	return uuidRE.ReplaceAllStringFunc(s, func(id string) string {
		id = strings.ToLower(strings.ReplaceAll(id, "-", ""))
		if r, ok := n.ids[id]; ok {
			return r
		}
		r := fmt.Sprintf("<id %d>", len(n.ids)+1)
		n.ids[id] = r
		return r
	})
}

// pretty is v as indented JSON, for a diff a reader can follow.
func pretty(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}
