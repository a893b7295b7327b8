package callbacks

import (
	"encoding/json"
	"sync"
	"sync/atomic"

	"github.com/google/jsonschema-go/jsonschema"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/classify"
)

// rejectedArgs is the classification of a call whose arguments do not fit the tool's
// declared input schema. functiontool validates the arguments before its handler runs
// (ADK-NOTES #29), so the dependency was never called: it is the model's mistake and
// says nothing about the dependency's health.
var rejectedArgs = classify.Classification{Outcome: classify.FailedBeforeSend, Class: classify.ClassValidation, Verdict: classify.Neutral}

// schemas caches resolved input schemas by the *jsonschema.Schema a tool declares.
// functiontool returns the same schema pointer on every Declaration call, so the cache
// holds one entry per tool; a tool that builds a new schema each time is resolved
// each time, which is correct, only slower, and happens only on the error path.
type schemas struct {
	m sync.Map // *jsonschema.Schema -> *jsonschema.Resolved (nil: not resolvable)
	n atomic.Int64
}

// maxCachedSchemas bounds the cache against tools that declare a new schema per call.
const maxCachedSchemas = 1024

type declarer interface {
	Declaration() *genai.FunctionDeclaration
}

// argsRejected reports whether args do not fit the JSON schema that t declares, which
// means functiontool refused the call before its handler ran. It is called only when a
// call failed, so successful calls pay nothing for it. A tool without a JSON schema, or
// with one that cannot be resolved, is never said to have rejected its arguments.
func (s *schemas) argsRejected(t tool.Tool, args map[string]any) bool {
	d, ok := t.(declarer)
	if !ok {
		return false
	}
	decl := safeDeclaration(d)
	if decl == nil {
		return false
	}
	schema, ok := decl.ParametersJsonSchema.(*jsonschema.Schema)
	if !ok || schema == nil {
		return false
	}
	var rs *jsonschema.Resolved
	if v, hit := s.m.Load(schema); hit {
		rs, _ = v.(*jsonschema.Resolved)
	} else {
		rs, _ = schema.Resolve(nil)
		if s.n.Load() < maxCachedSchemas {
			if _, loaded := s.m.LoadOrStore(schema, rs); !loaded {
				s.n.Add(1)
			}
		}
	}
	if rs == nil {
		return false
	}
	// Validate the JSON form, as functiontool does.
	raw, err := json.Marshal(args)
	if err != nil {
		return false
	}
	var decoded any
	if err := json.Unmarshal(raw, &decoded); err != nil {
		return false
	}
	if decoded == nil {
		decoded = map[string]any{}
	}
	return rs.Validate(decoded) != nil
}

// safeDeclaration calls Declaration, recovering a panic in a hand-written tool.
func safeDeclaration(d declarer) (decl *genai.FunctionDeclaration) {
	defer func() {
		if recover() != nil {
			decl = nil
		}
	}()
	return d.Declaration()
}
