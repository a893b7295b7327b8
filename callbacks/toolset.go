package callbacks

import (
	"hash/maphash"
	"reflect"
	"sync"
	"sync/atomic"

	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/tool"
	"google.golang.org/genai"

	"github.com/agentbreaker/agentbreaker/docstrings"
)

// maxToolSets bounds the cache of tool sets. An agent has one tool set per agent in
// its tree (more when tools are added per step); past the bound, sets are worked out
// afresh on every model call, which is correct, only slower.
const maxToolSets = 256

// toolSet is what agentbreaker works out once for one set of tools offered to the
// model: which of them it guards, and the declarations with the docstring sentence
// added. It is shared by every model call that offers the same tools and is never
// changed after it is built, except for decls, which is safe for concurrent use.
type toolSet struct {
	types   map[string]reflect.Type // the tools' names and types, to check a cache hit
	guarded map[string]bool         // names agentbreaker guards
	decls   sync.Map                // name -> *declEntry
}

// declEntry is one declaration with the sentence added, and the declaration it was
// made from, to check that a later declaration of the same tool is still the same.
type declEntry struct {
	src *genai.FunctionDeclaration
	out *genai.FunctionDeclaration
}

// toolSets caches toolSet values by a fingerprint of the tool names. The map is
// copied on write: reads take no lock and do not allocate.
type toolSets struct {
	seed maphash.Seed
	m    atomic.Pointer[map[uint64]*toolSet]
	mu   sync.Mutex // serialises writers
}

// fingerprint hashes the names of req's tools, in any order.
func (ts *toolSets) fingerprint(tools map[string]any) uint64 {
	var sum uint64
	for name := range tools {
		sum += maphash.String(ts.seed, name)
	}
	return sum ^ uint64(len(tools))
}

// toolSet returns the guarded tools of req, from the cache when the same tools were
// seen before.
func (c *Callbacks) toolSet(req *model.LLMRequest) *toolSet {
	ts := &c.toolSets
	fp := ts.fingerprint(req.Tools)
	if m := ts.m.Load(); m != nil {
		if s := (*m)[fp]; s != nil && s.matches(req.Tools) {
			return s
		}
	}
	s := &toolSet{types: make(map[string]reflect.Type, len(req.Tools)), guarded: make(map[string]bool, len(req.Tools))}
	for name, v := range req.Tools {
		s.types[name] = reflect.TypeOf(v)
		t, ok := v.(tool.Tool)
		if !ok || c.exempt(t) || c.deps.Exempt(name) {
			continue
		}
		s.guarded[name] = true
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	old := ts.m.Load()
	n := 0
	if old != nil {
		n = len(*old)
	}
	if n >= maxToolSets {
		return s
	}
	next := make(map[uint64]*toolSet, n+1)
	if old != nil {
		for k, v := range *old {
			next[k] = v
		}
	}
	next[fp] = s
	ts.m.Store(&next)
	return s
}

// matches reports whether tools are the set s was built for: the same names, each
// with a tool of the same type.
func (s *toolSet) matches(tools map[string]any) bool {
	if len(tools) != len(s.types) {
		return false
	}
	for name, v := range tools {
		typ, ok := s.types[name]
		if !ok || typ != reflect.TypeOf(v) {
			return false
		}
	}
	return true
}

// addDocstrings puts the declarations with the sentence added in place of the guarded
// tools' declarations of req. It replaces elements of the request's own slices and
// never edits a declaration: adk-go deep-copies the agent's config for each request
// and packs a fresh declaration list into it, while a declaration may be a tool's
// cached value shared by every step. A declaration is copied once per tool set and
// reused while the tool declares the same thing.
func (s *toolSet) addDocstrings(req *model.LLMRequest, sentence string) {
	if req.Config == nil {
		return
	}
	for _, t := range req.Config.Tools {
		if t == nil {
			continue
		}
		for j, d := range t.FunctionDeclarations {
			if d == nil || !s.guarded[d.Name] {
				continue
			}
			t.FunctionDeclarations[j] = s.withSentence(d, sentence)
		}
	}
}

func (s *toolSet) withSentence(d *genai.FunctionDeclaration, sentence string) *genai.FunctionDeclaration {
	if v, ok := s.decls.Load(d.Name); ok {
		if e := v.(*declEntry); e.src == d || sameDeclaration(e.src, d) {
			return e.out
		}
	}
	out := d
	if desc := docstrings.Append(d.Description, sentence); desc != d.Description {
		cp := *d
		cp.Description = desc
		out = &cp
	}
	s.decls.Store(d.Name, &declEntry{src: d, out: out})
	return out
}

// sameDeclaration reports whether a and b declare the same thing: the same name,
// description and behaviour, and the same schema values. Schemas are compared by
// identity (functiontool hands out the same schema on every call); any other kind of
// schema value makes them differ, which only costs a copy.
func sameDeclaration(a, b *genai.FunctionDeclaration) bool {
	return a.Name == b.Name && a.Description == b.Description && a.Behavior == b.Behavior &&
		a.Parameters == b.Parameters && a.Response == b.Response &&
		samePointer(a.ParametersJsonSchema, b.ParametersJsonSchema) &&
		samePointer(a.ResponseJsonSchema, b.ResponseJsonSchema)
}

// samePointer reports whether a and b are both nil, or the same pointer.
func samePointer(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	return va.Kind() == reflect.Pointer && va.Type() == vb.Type() && va.Pointer() == vb.Pointer()
}
