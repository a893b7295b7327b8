package depfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	yaml "go.yaml.in/yaml/v3"

	"github.com/agentbreaker/agentbreaker/dependencymap"
)

// Document is a dependency file as read: what could be decoded of it, every problem
// found in it, and where each of its keys is, so that a tool (agentbreaker lint) can
// report problems in the file's own terms and go on checking what is valid.
//
// A Document is not safe for concurrent mutation; its methods only read it.
type Document struct {
	// Name is the file's path as given to Read; "" for bytes parsed directly.
	Name string
	// File is what was decoded. Keys with problems keep their zero value.
	File File
	// Problems lists everything wrong, in the order of the file where positions are
	// known. Empty when the file is valid.
	Problems []Problem

	keys map[string]*yaml.Node // path -> the key's node (a list item's own node)
	seen map[string]bool       // problems already reported, by path and message
}

// Read reads and checks a dependency file, YAML (.yaml, .yml) or JSON (.json). It
// returns an error only when the file cannot be read; every problem with its contents,
// an unknown extension included, is in the Document's Problems.
func Read(path string) (*Document, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".yaml", ".yml":
		return parse(path, data, false), nil
	case ".json":
		return parse(path, data, true), nil
	default:
		d := &Document{Name: path}
		d.add(Problem{Message: fmt.Sprintf("extension %q: want .yaml, .yml or .json", ext)})
		return d, nil
	}
}

// Err returns nil when the file is valid, or an *Error listing every problem.
func (d *Document) Err() error {
	if len(d.Problems) == 0 {
		return nil
	}
	return &Error{File: d.Name, Problems: slices.Clone(d.Problems)}
}

// Config returns the checked configuration, or the *Error of every problem.
func (d *Document) Config() (dependencymap.Config, error) {
	if err := d.Err(); err != nil {
		return dependencymap.Config{}, err
	}
	cfg := d.File.convert()
	// The checks above are meant to be New's, in the file's terms; this keeps a
	// problem they missed from reaching the agent.
	if _, err := dependencymap.New(cfg); err != nil {
		return dependencymap.Config{}, &Error{File: d.Name, Problems: []Problem{{Message: strings.TrimPrefix(err.Error(), "dependencymap: ")}}}
	}
	return cfg, nil
}

// Has reports whether the file sets the key at path ("dependencies.crm.policy.window").
func (d *Document) Has(path string) bool {
	_, ok := d.keys[path]
	return ok
}

// Position returns the line and column of the key at path, or of the nearest key
// above it that the file has; zeros when there is none.
func (d *Document) Position(path string) (line, column int) {
	for p := path; p != ""; p = parent(p) {
		if n, ok := d.keys[p]; ok {
			return n.Line, n.Column
		}
	}
	return 0, 0
}

// PolicySource returns the path of the key that sets the policy field key (a file
// key such as "minimum_calls") for dependency dep: its own policy's, the default
// policy's, or "" when neither sets it and the built-in default applies.
func (d *Document) PolicySource(dep, key string) string {
	for _, p := range []string{"dependencies." + dep + ".policy." + key, "default." + key} {
		if d.Has(p) {
			return p
		}
	}
	return ""
}

// parent is the path one level up: "a.b[2]" -> "a.b", "a.b" -> "a", "a" -> "".
func parent(p string) string {
	if strings.HasSuffix(p, "]") {
		if i := strings.LastIndexByte(p, '['); i >= 0 {
			return p[:i]
		}
	}
	if i := strings.LastIndexByte(p, '.'); i >= 0 {
		return p[:i]
	}
	return ""
}

// add records a problem once (a value inherited by several dependencies is reported
// where it is written, not once per dependency).
func (d *Document) add(p Problem) {
	k := p.Path + "\x00" + p.Message
	if d.seen == nil {
		d.seen = map[string]bool{}
	}
	if d.seen[k] {
		return
	}
	d.seen[k] = true
	d.Problems = append(d.Problems, p)
}

// at records a problem about the key at path, positioned where the file has it.
func (d *Document) at(path string, value any, format string, args ...any) {
	line, col := d.Position(path)
	d.add(Problem{Path: path, Line: line, Column: col, Value: value, Message: fmt.Sprintf(format, args...)})
}

// parse reads data (JSON when isJSON) and checks it completely.
func parse(name string, data []byte, isJSON bool) *Document {
	d := &Document{Name: name, keys: map[string]*yaml.Node{}}
	if isJSON && !d.jsonSyntax(data) {
		return d
	}
	root, ok := d.yamlNode(data, isJSON)
	if !ok {
		if isJSON {
			d.jsonFallback(data)
		}
		return d
	}
	if root != nil {
		w := walker{d: d, json: isJSON}
		w.walk(root, reflect.TypeFor[File](), "", 0)
		if err := root.Decode(&d.File); err != nil && len(d.Problems) == 0 {
			d.add(Problem{Message: strings.TrimPrefix(err.Error(), "yaml: ")})
		}
	}
	d.check()
	// In the order of the file, so a reader can go down it fixing each.
	slices.SortStableFunc(d.Problems, func(a, b Problem) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Column - b.Column
	})
	return d
}

// jsonSyntax reports JSON syntax errors with their line and column.
func (d *Document) jsonSyntax(data []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	var v any
	err := dec.Decode(&v)
	var se *json.SyntaxError
	switch {
	case errors.Is(err, io.EOF):
		d.add(Problem{Message: "the file is empty: want a JSON object"})
		return false
	case errors.Is(err, io.ErrUnexpectedEOF):
		line, col := lineCol(data, len(data))
		d.add(Problem{Line: line, Column: col, Message: "the file ends inside a value: an object, array or string is not closed"})
		return false
	case errors.As(err, &se):
		line, col := lineCol(data, int(se.Offset)-1)
		d.add(Problem{Line: line, Column: col, Message: se.Error()})
		return false
	case err != nil:
		d.add(Problem{Message: err.Error()})
		return false
	}
	// Nothing may follow the object: `{}0` or a second object would be silently ignored.
	off := int(dec.InputOffset())
	if rest := bytes.TrimSpace(data[off:]); len(rest) > 0 {
		line, col := lineCol(data, off+bytes.Index(data[off:], rest[:1]))
		d.add(Problem{Line: line, Column: col, Message: fmt.Sprintf("unexpected data after the top-level value: %q", truncate(rest, 20))})
		return false
	}
	return true
}

// lineCol turns a byte offset into a line and a column (in characters), from 1.
func lineCol(data []byte, off int) (line, col int) {
	off = max(0, min(off, len(data)))
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:]) + 1
	return line, col
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlNode parses one YAML document (JSON is YAML too) into its node tree: nil for an
// empty file, false when it has a syntax error (recorded).
func (d *Document) yamlNode(data []byte, isJSON bool) (*yaml.Node, bool) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, true
		}
		if isJSON {
			return nil, false // valid JSON that the YAML parser refuses: read it as JSON alone
		}
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
			line, _ := strconv.Atoi(m[1])
			d.add(Problem{Line: line, Message: m[2]})
		} else {
			d.add(Problem{Message: strings.TrimPrefix(err.Error(), "yaml: ")})
		}
		return nil, false
	}
	// One document only: a second one would be silently ignored.
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			d.add(Problem{Message: "after the first document: " + strings.TrimPrefix(err.Error(), "yaml: ")})
		} else {
			d.add(Problem{Line: extra.Line, Message: "a second document starts here: want exactly one"})
		}
		return nil, false
	}
	if len(doc.Content) == 0 {
		return nil, true
	}
	return doc.Content[0], true
}

// jsonFallback decodes JSON that the YAML parser refused (a tab where YAML forbids
// one): strictly, with what positions encoding/json gives.
func (d *Document) jsonFallback(data []byte) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d.File); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			line, col := lineCol(data, int(te.Offset))
			d.add(Problem{Path: te.Field, Line: line, Column: col, Message: "want a " + te.Type.Kind().String() + ", not a JSON " + te.Value})
		} else {
			d.add(Problem{Message: strings.TrimPrefix(err.Error(), "json: ")})
		}
		return
	}
	d.check()
}

// walker checks a node tree against the shape of File: every key known, every value
// of the kind its field wants. It records where each key is.
type walker struct {
	d    *Document
	json bool
}

// maxDepth bounds the walk: File is four levels deep, and aliases can loop.
const maxDepth = 8

var intOrOffType = reflect.TypeFor[IntOrOff]()

func (w walker) kind(mapping bool) string {
	switch {
	case mapping && w.json:
		return "an object"
	case mapping:
		return "a mapping"
	case w.json:
		return "an array"
	default:
		return "a list"
	}
}

func scalarValue(n *yaml.Node) any {
	if n.Kind != yaml.ScalarNode {
		return nil
	}
	if n.Tag == "!!str" {
		return n.Value
	}
	return literal(n.Value)
}

// walk checks node n against type t, the part of File at path, depth levels down, and
// adds a Problem to the document for each thing that does not fit. It records each
// key's node in d.keys.
func (w walker) walk(n *yaml.Node, t reflect.Type, path string, depth int) {
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil || depth > maxDepth {
			return
		}
		n = n.Alias
	}
	if depth > maxDepth || n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return // absent: the field keeps its zero value, which inherits
	}
	switch {
	case t.Kind() == reflect.Pointer: // an optional block (probe, throttle): its keys as the block's
		w.walk(n, t.Elem(), path, depth)
	case t == intOrOffType:
		w.walkIntOrOff(n, path)
	case t.Kind() == reflect.Struct:
		w.walkStruct(n, t, path, depth)
	case t.Kind() == reflect.Map:
		w.walkMap(n, t, path, depth)
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			w.bad(n, path, "want %s", w.kind(false))
			return
		}
		for i, item := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			w.d.keys[p] = item
			w.walk(item, t.Elem(), p, depth+1)
		}
	default:
		w.walkScalar(n, t, path)
	}
}

// bad adds a problem with node n, at path, to the document.
func (w walker) bad(n *yaml.Node, path, format string, args ...any) {
	w.d.add(Problem{Path: path, Line: n.Line, Column: n.Column, Value: scalarValue(n), Message: fmt.Sprintf(format, args...)})
}

// walkIntOrOff checks an IntOrOff: a whole number of calls, at least 0, or Off.
func (w walker) walkIntOrOff(n *yaml.Node, path string) {
	if n.Kind != yaml.ScalarNode {
		w.bad(n, path, "want a number or %q", Off)
		return
	}
	var v int
	switch {
	case n.Value == Off:
	case n.ShortTag() != "!!int" || n.Decode(&v) != nil:
		w.bad(n, path, "want a whole number of calls, or %q", Off)
	case v < 0:
		w.bad(n, path, "want a positive number of calls, or %q", Off)
	}
}

// walkStruct checks a block of settings: a mapping whose keys are t's fields' (their
// yaml tags), each at most once, and walks each value.
func (w walker) walkStruct(n *yaml.Node, t reflect.Type, path string, depth int) {
	d := w.d
	if n.Kind != yaml.MappingNode {
		if path == "" {
			d.add(Problem{Line: n.Line, Column: n.Column, Message: "want " + w.kind(true) + " of settings at the top of the file"})
		} else {
			w.bad(n, path, "want %s with the keys %s", w.kind(true), strings.Join(fieldKeys(t), ", "))
		}
		return
	}
	where := path
	if path == "" {
		where = "the file"
	}
	fields := fieldsOf(t)
	first := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		p := join(path, k.Value)
		if line, dup := first[k.Value]; dup {
			d.add(Problem{Path: p, Line: k.Line, Column: k.Column, Message: fmt.Sprintf("set twice (first on line %d)", line)})
			continue
		}
		first[k.Value] = k.Line
		d.keys[p] = k
		f, ok := fields[k.Value]
		if !ok {
			msg := "unknown key in " + where + "; the keys are " + strings.Join(fieldKeys(t), ", ")
			if s := suggest(k.Value, fieldKeys(t)); s != "" {
				msg = fmt.Sprintf("unknown key in %s: did you mean %s?", where, s)
			}
			d.add(Problem{Path: p, Line: k.Line, Column: k.Column, Message: msg})
			continue
		}
		w.walk(v, f.Type, p, depth+1)
	}
}

// walkMap checks the dependencies: a mapping of names, non-empty and each listed
// once, to settings of t's element type, and walks each.
func (w walker) walkMap(n *yaml.Node, t reflect.Type, path string, depth int) {
	d := w.d
	if n.Kind != yaml.MappingNode {
		w.bad(n, path, "want %s of names to settings", w.kind(true))
		return
	}
	first := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		p := path + "." + k.Value
		if line, dup := first[k.Value]; dup {
			d.add(Problem{Path: p, Line: k.Line, Column: k.Column, Message: fmt.Sprintf("listed twice (first on line %d)", line)})
			continue
		}
		first[k.Value] = k.Line
		d.keys[p] = k
		if k.Value == "" {
			d.add(Problem{Path: path, Line: k.Line, Column: k.Column, Message: "a dependency's name is empty"})
			continue
		}
		w.walk(v, t.Elem(), p, depth+1)
	}
}

// walkScalar checks a single value of kind string, int or float64.
func (w walker) walkScalar(n *yaml.Node, t reflect.Type, path string) {
	switch t.Kind() {
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			w.bad(n, path, "want a single value, not %s", map[bool]string{true: w.kind(true), false: w.kind(false)}[n.Kind == yaml.MappingNode])
		}
	case reflect.Int:
		// The tag too: the YAML decoder would truncate 0.5 to 0 (which means "inherit").
		var v int
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&v) != nil {
			w.bad(n, path, "want a whole number")
		}
	case reflect.Float64:
		var v float64
		if n.Kind != yaml.ScalarNode || n.Decode(&v) != nil {
			w.bad(n, path, "want a number")
		}
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// fieldsOf maps a struct's file keys (its yaml tags) to its fields.
func fieldsOf(t reflect.Type) map[string]reflect.StructField {
	out := map[string]reflect.StructField{}
	for i := range t.NumField() {
		f := t.Field(i)
		if key, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); key != "" && key != "-" {
			out[key] = f
		}
	}
	return out
}

// fieldKeys lists a struct's file keys in the order of its fields.
func fieldKeys(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		if key, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); key != "" && key != "-" {
			out = append(out, key)
		}
	}
	return out
}

// suggest returns the known key closest to a misspelt one, or "" when none is close.
func suggest(got string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		if dist := editDistance(got, k); dist < bestD {
			best, bestD = k, dist
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
