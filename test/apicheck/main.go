package main

import (
	"bytes"
	"fmt"
	"go/constant"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path"
	"regexp"
	"slices"
	"strings"
)

func main() {
	dir := "." // the module to list: the repository root, from .ci/api.sh
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := run(os.Stdout, dir); err != nil {
		fmt.Fprintln(os.Stderr, "apicheck:", err)
		os.Exit(1)
	}
}

// header opens the listing; it is part of the compared text, so it changes only with
// this file.
const header = `# The exported API of agentbreaker's public packages, one line per feature, written by
# test/apicheck. CI fails when the code's API differs from this file; a commit that
# changes the API updates it with ` + "`bash .ci/api.sh -update`" + ` and names the change in
# CHANGELOG.md. "agentbreaker/" stands for "github.com/agentbreaker/".
`

// notPublic matches the packages that are not part of the surface.
var notPublic = regexp.MustCompile(`/(internal|cmd|examples|deploy)(/|$)`)

// run writes the listing of the module in dir to w.
func run(w io.Writer, dir string) error {
	mod, err := goList(dir, "-m", "-f", "{{.Path}}")
	if err != nil {
		return err
	}
	if len(mod) != 1 {
		return fmt.Errorf("go list -m printed %d modules, want the main module alone", len(mod))
	}
	all, err := goList(dir, "./...")
	if err != nil {
		return err
	}
	var public []string
	for _, p := range all {
		if !notPublic.MatchString(strings.TrimPrefix(p, mod[0])) {
			public = append(public, p)
		}
	}
	// The export data of the public packages and of everything they import: the
	// importer asks for a package by its path and reads the file go list names.
	rows, err := goList(dir, append([]string{"-deps", "-export", "-f", "{{.ImportPath}}\t{{.Export}}"}, public...)...)
	if err != nil {
		return err
	}
	exports := map[string]string{}
	for _, r := range rows {
		p, file, _ := strings.Cut(r, "\t")
		exports[p] = file
	}
	imp := importer.ForCompiler(token.NewFileSet(), "gc", func(p string) (io.ReadCloser, error) {
		file := exports[p]
		if file == "" {
			return nil, fmt.Errorf("go list named no export data for %s", p)
		}
		return os.Open(file)
	})
	var lines []string
	for _, p := range public {
		pkg, err := imp.Import(p)
		if err != nil {
			return fmt.Errorf("importing %s: %w", p, err)
		}
		l := lister{mod: mod[0], pkg: pkg}
		l.list()
		lines = append(lines, l.lines...)
	}
	slices.Sort(lines)
	lines = slices.Compact(lines)
	if _, err := io.WriteString(w, header); err != nil {
		return err
	}
	for _, line := range lines {
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return nil
}

// goList runs go list in dir with args and returns its lines.
func goList(dir string, args ...string) ([]string, error) {
	cmd := exec.Command("go", append([]string{"list"}, args...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n"), nil
}

// lister collects the lines of one package.
type lister struct {
	mod   string // the main module's path
	pkg   *types.Package
	lines []string
}

func (l *lister) emit(format string, args ...any) {
	l.lines = append(l.lines, "pkg "+l.path(l.pkg)+", "+fmt.Sprintf(format, args...))
}

// path names a package as the listing does.
func (l *lister) path(p *types.Package) string {
	if p.Path() == l.mod || strings.HasPrefix(p.Path(), l.mod+"/") {
		return path.Base(l.mod) + strings.TrimPrefix(p.Path(), l.mod)
	}
	return p.Path()
}

func (l *lister) list() {
	scope := l.pkg.Scope()
	for _, name := range scope.Names() {
		switch obj := scope.Lookup(name).(type) {
		case *types.Const:
			if obj.Exported() {
				l.emit("const %s %s", name, l.typ(obj.Type()))
				l.emit("const %s = %s", name, constValue(obj))
			}
		case *types.Var:
			if obj.Exported() {
				l.emit("var %s %s", name, l.typ(obj.Type()))
			}
		case *types.Func:
			if obj.Exported() {
				l.emit("func %s%s", name, l.sig(obj.Type().(*types.Signature)))
			}
		case *types.TypeName:
			if obj.Exported() {
				l.typeName(obj)
			}
		}
	}
}

func constValue(c *types.Const) string {
	// A float's exact form is a fraction (1/10); its short form is what a reader
	// expects and still changes with the value in all but the 7th digit.
	if v := c.Val(); v.Kind() != constant.Float {
		return v.ExactString()
	}
	return c.Val().String()
}

func (l *lister) typeName(obj *types.TypeName) {
	name := obj.Name()
	if obj.IsAlias() {
		l.emit("type %s = %s", name, l.typ(types.Unalias(obj.Type())))
		return
	}
	named, ok := obj.Type().(*types.Named)
	if !ok {
		l.emit("type %s %s", name, l.typ(obj.Type()))
		return
	}
	decl := name + l.typeParams(named.TypeParams())
	switch u := named.Underlying().(type) {
	case *types.Struct:
		l.emit("type %s struct", decl)
		l.fields(name, u, 0)
	case *types.Interface:
		if !u.IsMethodSet() {
			l.emit("type %s %s", decl, l.typ(u))
			break
		}
		var names []string
		unexported := false
		for i := range u.NumMethods() {
			m := u.Method(i)
			if !m.Exported() {
				unexported = true
				continue
			}
			names = append(names, m.Name())
			l.emit("type %s interface, %s%s", name, m.Name(), l.sig(m.Type().(*types.Signature)))
		}
		if unexported {
			names = append(names, "unexported methods")
		}
		l.emit("type %s interface { %s }", decl, strings.Join(names, ", "))
		return
	default:
		l.emit("type %s %s", decl, l.typ(u))
	}
	l.methods(named)
}

// fields lists the exported fields of the struct s, the outer type's own or, with
// depth > 0, those promoted from an embedded struct the user cannot look up elsewhere.
func (l *lister) fields(outer string, s *types.Struct, depth int) {
	for i := range s.NumFields() {
		f := s.Field(i)
		switch {
		case f.Embedded():
			if f.Exported() {
				l.emit("type %s struct, embedded %s", outer, l.typ(f.Type()))
			}
			if inner, ok := types.Unalias(deref(f.Type())).Underlying().(*types.Struct); ok && !l.listedElsewhere(f.Type()) && depth < 8 {
				l.fields(outer, inner, depth+1)
			}
		case f.Exported():
			l.emit("type %s struct, %s %s", outer, f.Name(), l.typ(f.Type()))
		}
	}
}

// listedElsewhere reports whether a user finds the fields and methods an embedded type
// promotes under the type's own name: true for a dependency's type or an exported type
// of a public package of this module, false for an unexported type or one of an
// internal package, whose promoted fields and methods are listed on the outer type.
func (l *lister) listedElsewhere(t types.Type) bool {
	var obj *types.TypeName
	switch t := types.Unalias(deref(t)).(type) {
	case *types.Named:
		obj = t.Obj()
	default:
		return true
	}
	p := obj.Pkg()
	if p == nil {
		return true // error
	}
	if p.Path() != l.mod && !strings.HasPrefix(p.Path(), l.mod+"/") {
		return true
	}
	return obj.Exported() && !notPublic.MatchString(strings.TrimPrefix(p.Path(), l.mod))
}

func deref(t types.Type) types.Type {
	if p, ok := t.(*types.Pointer); ok {
		return p.Elem()
	}
	return t
}

// methods lists the exported methods of named: those declared on it and those promoted
// from an embedded type that is not listed elsewhere.
func (l *lister) methods(named *types.Named) {
	values := types.NewMethodSet(named)
	all := types.NewMethodSet(types.NewPointer(named))
	var st *types.Struct
	if s, ok := named.Underlying().(*types.Struct); ok {
		st = s
	}
	for sel := range all.Methods() {
		m := sel.Obj().(*types.Func)
		if !m.Exported() {
			continue
		}
		if idx := sel.Index(); len(idx) > 1 && !l.promoted(st, idx) {
			continue
		}
		recv := named.Obj().Name()
		if tp := named.TypeParams(); tp.Len() > 0 {
			var names []string
			for p := range tp.TypeParams() {
				names = append(names, p.Obj().Name())
			}
			recv += "[" + strings.Join(names, ", ") + "]"
		}
		if values.Lookup(m.Pkg(), m.Name()) == nil {
			recv = "*" + recv
		}
		l.emit("method (%s) %s%s", recv, m.Name(), l.sig(m.Type().(*types.Signature)))
	}
}

// promoted reports whether a method reached through the embedded fields at index (the
// last element is the method's) comes through a type not listed elsewhere.
func (l *lister) promoted(st *types.Struct, index []int) bool {
	for _, i := range index[:len(index)-1] {
		if st == nil {
			return false
		}
		f := st.Field(i)
		if !l.listedElsewhere(f.Type()) {
			return true
		}
		st, _ = types.Unalias(deref(f.Type())).Underlying().(*types.Struct)
	}
	return false
}

// sig prints a signature without "func" and without parameter names.
func (l *lister) sig(s *types.Signature) string {
	var b strings.Builder
	b.WriteString(l.typeParams(s.TypeParams()))
	b.WriteString("(")
	params := s.Params()
	for i := range params.Len() {
		if i > 0 {
			b.WriteString(", ")
		}
		t := params.At(i).Type()
		if s.Variadic() && i == params.Len()-1 {
			if sl, ok := t.(*types.Slice); ok {
				b.WriteString("...")
				t = sl.Elem()
			}
		}
		b.WriteString(l.typ(t))
	}
	b.WriteString(")")
	switch res := s.Results(); res.Len() {
	case 0:
	case 1:
		b.WriteString(" " + l.typ(res.At(0).Type()))
	default:
		var ts []string
		for v := range res.Variables() {
			ts = append(ts, l.typ(v.Type()))
		}
		b.WriteString(" (" + strings.Join(ts, ", ") + ")")
	}
	return b.String()
}

func (l *lister) typeParams(tp *types.TypeParamList) string {
	if tp.Len() == 0 {
		return ""
	}
	var ps []string
	for p := range tp.TypeParams() {
		ps = append(ps, p.Obj().Name()+" "+l.typ(p.Constraint()))
	}
	return "[" + strings.Join(ps, ", ") + "]"
}

// typ prints a type as Go source would, packages named as the listing names them,
// without parameter names and struct tags.
func (l *lister) typ(t types.Type) string {
	switch t := t.(type) {
	case *types.Basic:
		return t.Name()
	case *types.Pointer:
		return "*" + l.typ(t.Elem())
	case *types.Slice:
		return "[]" + l.typ(t.Elem())
	case *types.Array:
		return fmt.Sprintf("[%d]%s", t.Len(), l.typ(t.Elem()))
	case *types.Map:
		return "map[" + l.typ(t.Key()) + "]" + l.typ(t.Elem())
	case *types.Chan:
		elem := l.typ(t.Elem())
		switch t.Dir() {
		case types.SendOnly:
			return "chan<- " + elem
		case types.RecvOnly:
			return "<-chan " + elem
		}
		if c, ok := t.Elem().(*types.Chan); ok && c.Dir() == types.RecvOnly {
			elem = "(" + elem + ")"
		}
		return "chan " + elem
	case *types.Signature:
		return "func" + l.sig(t)
	case *types.Struct:
		var fs []string
		for i := range t.NumFields() {
			f := t.Field(i)
			if f.Embedded() {
				fs = append(fs, l.typ(f.Type()))
			} else {
				fs = append(fs, f.Name()+" "+l.typ(f.Type()))
			}
		}
		if len(fs) == 0 {
			return "struct{}"
		}
		return "struct{ " + strings.Join(fs, "; ") + " }"
	case *types.Interface:
		var ms []string
		for i := range t.NumEmbeddeds() {
			if e := t.EmbeddedType(i); !types.IsInterface(e) || !e.Underlying().(*types.Interface).IsMethodSet() {
				ms = append(ms, l.typ(e))
			}
		}
		for i := range t.NumMethods() {
			m := t.Method(i)
			ms = append(ms, m.Name()+l.sig(m.Type().(*types.Signature)))
		}
		if len(ms) == 0 {
			return "interface{}"
		}
		return "interface{ " + strings.Join(ms, "; ") + " }"
	case *types.Union:
		var terms []string
		for i := range t.Len() {
			term := t.Term(i)
			s := l.typ(term.Type())
			if term.Tilde() {
				s = "~" + s
			}
			terms = append(terms, s)
		}
		return strings.Join(terms, " | ")
	case *types.TypeParam:
		return t.Obj().Name()
	case *types.Named:
		return l.typeRef(t.Obj(), t.TypeArgs())
	case *types.Alias:
		return l.typeRef(t.Obj(), t.TypeArgs())
	}
	return types.TypeString(t, func(p *types.Package) string { return l.path(p) })
}

// typeRef names a defined type or alias with its type arguments.
func (l *lister) typeRef(obj *types.TypeName, args *types.TypeList) string {
	s := obj.Name()
	if p := obj.Pkg(); p != nil && p.Path() != l.pkg.Path() {
		s = l.path(p) + "." + s
	}
	if args.Len() > 0 {
		var as []string
		for a := range args.Types() {
			as = append(as, l.typ(a))
		}
		s += "[" + strings.Join(as, ", ") + "]"
	}
	return s
}
