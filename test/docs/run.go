package docs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// repoRoot is the repository, two levels up from this package (test/docs). Commands
// run there, as a reader runs them from a clone.
const repoRoot = "../.."

// runner builds each program a page runs once, and runs commands.
type runner struct {
	bin    string // directory of the built programs
	mu     sync.Mutex
	built  map[string]string // package path → binary
	outs   map[string]result // command line → its result, so a command runs once
	outDir string
}

type result struct {
	out  []byte
	exit int
	file []byte // what the command wrote to $OUT, when it names $OUT
	tmp  string
}

// binary builds pkg (a path such as ./cmd/agentbreaker) once, in dir (a directory of
// the repository, "" for its root), and returns the program.
func (r *runner) binary(dir, pkg string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := filepath.Join(dir, pkg)
	if b, ok := r.built[key]; ok {
		return b, nil
	}
	out := filepath.Join(r.bin, strings.NewReplacer("/", "_", ".", "_").Replace(key))
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = filepath.Join(repoRoot, dir)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s in %s: %v\n%s", pkg, cmd.Dir, err, b)
	}
	r.built[key] = out
	return out, nil
}

// program turns a command's first words into a program, the directory it runs in
// (relative to the repository's root) and its arguments: agentbreaker is
// ./cmd/agentbreaker, "go run ./PATH" is that package, and "go -C DIR run ./PATH" is
// the package at PATH of DIR (another module of the repository, such as sim/peers), run
// in DIR as go -C runs it. Nothing else runs (no shell).
func (r *runner) program(words []string) (prog, dir string, args []string, err error) {
	switch {
	case len(words) > 0 && words[0] == "agentbreaker":
		prog, err = r.binary("", "./cmd/agentbreaker")
		return prog, "", words[1:], err
	case len(words) > 2 && words[0] == "go" && words[1] == "run" && strings.HasPrefix(words[2], "./"):
		prog, err = r.binary("", words[2])
		return prog, "", words[3:], err
	case len(words) > 4 && words[0] == "go" && words[1] == "-C" && words[3] == "run" && strings.HasPrefix(words[4], "./"):
		dir = words[2]
		if !filepath.IsLocal(dir) {
			return "", "", nil, fmt.Errorf("%q: go -C takes a directory inside the repository", strings.Join(words, " "))
		}
		prog, err = r.binary(dir, words[4])
		return prog, dir, words[5:], err
	}
	return "", "", nil, fmt.Errorf("%q: a marked command starts with agentbreaker, go run ./PATH or go -C DIR run ./PATH", strings.Join(words, " "))
}

// run runs one marked command line (with its filters) and returns what the page must
// show: the output after the filters, with the temporary directory written "$TMP".
func (r *runner) run(line string) (result, error) {
	r.mu.Lock()
	if res, ok := r.outs[line]; ok {
		r.mu.Unlock()
		return res, nil
	}
	r.mu.Unlock()
	parts := splitPipes(line)
	tmp, err := os.MkdirTemp(r.outDir, "run")
	if err != nil {
		return result{}, err
	}
	outFile := filepath.Join(tmp, "out")
	words, err := splitWords(parts[0], map[string]string{"TMP": tmp, "OUT": outFile})
	if err != nil {
		return result{}, err
	}
	prog, dir, args, err := r.program(words)
	if err != nil {
		return result{}, err
	}
	cmd := exec.Command(prog, args...)
	cmd.Dir = filepath.Join(repoRoot, dir)
	cmd.Env = append(os.Environ(), "TMP="+tmp, "NO_COLOR=1")
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	res := result{tmp: tmp}
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			return result{}, err
		}
		res.exit = ee.ExitCode()
	}
	out := strings.ReplaceAll(buf.String(), tmp, "$TMP")
	for _, f := range parts[1:] {
		if out, err = filter(out, f); err != nil {
			return result{}, err
		}
	}
	res.out = []byte(out)
	if b, err := os.ReadFile(outFile); err == nil {
		res.file = b
	}
	r.mu.Lock()
	r.outs[line] = res
	r.mu.Unlock()
	return res, nil
}

// splitPipes cuts "cmd | head 5 | grep x" at the pipes outside quotes.
func splitPipes(line string) []string {
	var parts []string
	var quote rune
	start := 0
	for i, c := range line {
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '|':
			parts = append(parts, strings.TrimSpace(line[start:i]))
			start = i + 1
		}
	}
	return append(parts, strings.TrimSpace(line[start:]))
}

// splitWords splits a command into words as a shell would for the simple commands a
// page shows: spaces separate, quotes group, $NAME and "$NAME" expand from vars.
func splitWords(s string, vars map[string]string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		switch {
		case quote == '\'' && c != '\'':
			cur.WriteRune(c)
		case c == quote:
			quote = 0
		case quote == 0 && (c == '"' || c == '\''):
			quote, inWord = c, true
		case c == '$' && quote != '\'':
			j := i + 1
			for j < len(rs) && (rs[j] == '_' || rs[j] >= 'A' && rs[j] <= 'Z') {
				j++
			}
			name := string(rs[i+1 : j])
			v, ok := vars[name]
			if !ok {
				return nil, fmt.Errorf("%q: unknown variable $%s (only $TMP and $OUT)", s, name)
			}
			cur.WriteString(v)
			inWord, i = true, j-1
		case quote == 0 && c == ' ':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(c)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("%q: unclosed quote", s)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// filter applies one of the filters a marker may name: head N, tail N, grep TEXT (lines
// containing TEXT), lines A-B,C-D (those lines, "  ..." where some are left out).
func filter(out, f string) (string, error) {
	name, arg, _ := strings.Cut(f, " ")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	var kept []string
	switch name {
	case "head", "tail":
		n, err := strconv.Atoi(arg)
		if err != nil || n < 0 {
			return "", fmt.Errorf("filter %q: want %s N", f, name)
		}
		n = min(n, len(lines))
		if name == "head" {
			kept = lines[:n]
		} else {
			kept = lines[len(lines)-n:]
		}
	case "grep":
		for _, l := range lines {
			if strings.Contains(l, arg) {
				kept = append(kept, l)
			}
		}
	case "lines":
		next := 1
		for _, span := range strings.Split(arg, ",") {
			a, b, found := strings.Cut(span, "-")
			lo, err1 := strconv.Atoi(a)
			hi, err2 := lo, error(nil)
			if found {
				hi, err2 = strconv.Atoi(b)
			}
			if err1 != nil || err2 != nil || lo < next || hi < lo || hi > len(lines) {
				return "", fmt.Errorf("filter %q: want ascending line ranges within the %d lines, such as 1-4,9-12", f, len(lines))
			}
			if lo > next {
				kept = append(kept, "  ...")
			}
			kept = append(kept, lines[lo-1:hi]...)
			next = hi + 1
		}
		if next <= len(lines) {
			kept = append(kept, "  ...")
		}
	default:
		return "", fmt.Errorf("filter %q: want head N, tail N, grep TEXT or lines A-B,C-D", f)
	}
	if len(kept) == 0 {
		return "", nil
	}
	return strings.Join(kept, "\n") + "\n", nil
}
