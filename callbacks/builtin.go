package callbacks

import (
	"reflect"
	"slices"
	"strings"

	"google.golang.org/adk/v2/tool"
)

// builtinToolNames are adk-go's built-in tools by name. They call no dependency of the
// user's (or only adk-go's own stores), so guarding them would only stop an agent from
// transferring, finishing or ending a loop.
var builtinToolNames = []string{
	"transfer_to_agent",
	"exit_loop",
	"set_model_response",
	"finish_task",
	"load_artifacts",
	"load_memory",
	"preload_memory",
	"adk_request_confirmation",
	"stop_streaming",
	"google_search",
}

// builtinPackages hold adk-go's built-in tool types. Tools named after sub-agents
// (single-turn and task delegation) have no fixed name, so they are recognised by type.
var builtinPackages = []string{
	"google.golang.org/adk/v2/internal/",
	"google.golang.org/adk/v2/tool/exitlooptool",
	"google.golang.org/adk/v2/tool/loadartifactstool",
	"google.golang.org/adk/v2/tool/loadmemorytool",
	"google.golang.org/adk/v2/tool/preloadmemorytool",
	"google.golang.org/adk/v2/tool/geminitool",
}

// BuiltinTools returns the names of adk-go's built-in tools that are exempt by default.
// Tools of adk-go's own built-in types (sub-agent delegation tools, named after the
// sub-agent) are exempt as well.
func BuiltinTools() []string { return slices.Clone(builtinToolNames) }

// exempt reports whether t is left unguarded by the callbacks' own rules (the
// dependency map may exempt more).
func (c *Callbacks) exempt(t tool.Tool) bool {
	if c.exemptNames[t.Name()] {
		return true
	}
	if c.cfg.GuardBuiltinTools {
		return false
	}
	typ := reflect.TypeOf(t)
	if v, ok := c.builtinTypes.Load(typ); ok {
		return v.(bool)
	}
	b := isBuiltinType(typ)
	c.builtinTypes.Store(typ, b)
	return b
}

func isBuiltinType(typ reflect.Type) bool {
	for typ != nil && typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if typ == nil {
		return false
	}
	pkg := typ.PkgPath()
	for _, p := range builtinPackages {
		if pkg == strings.TrimSuffix(p, "/") || strings.HasPrefix(pkg, p) {
			return true
		}
	}
	return false
}
