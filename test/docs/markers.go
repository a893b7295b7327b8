package docs

import (
	"fmt"
	"regexp"
	"strings"
)

// The markers a page may hold (see docs/CONTRIBUTING-docs.md):
//
//	<!-- run: CMD [| FILTER]... -->     then a fenced block: "$ CMD" and CMD's output
//	<!-- table: CMD -->                 then CMD's output as is (a Markdown table), up to
//	                                    a line <!-- /table -->
//	<!-- run, exit N: CMD -->           the same for a command that must exit N, and a
//	                                    last line "[exit status N]"
//	<!-- fig: NAME -->VALUE<!-- /fig -->  a figure inside a sentence, from the figures table
//	<!-- file PATH: CMD -->             PATH must equal the file CMD writes to "$OUT"
var (
	runMarker  = regexp.MustCompile(`^<!-- run(?:, exit (\d+))?: (.+) -->$`)
	tableMark  = regexp.MustCompile(`^<!-- table: (.+) -->$`)
	figMarker  = regexp.MustCompile(`<!-- fig: ([\w.-]+) -->(.*?)<!-- /fig -->`)
	fileMarker = regexp.MustCompile(`^<!-- file (\S+): (.+) -->$`)
	fence      = regexp.MustCompile("^```")
)

// block is one run marker and the fenced block under it, by line index in the page.
type block struct {
	line       int // the marker's line
	cmd        string
	exit       int
	open, shut int // the fence lines (for a table, the two markers)
	table      bool
}

// file is one file marker.
type file struct {
	line int
	path string
	cmd  string
}

// scan finds the page's run and file markers. A run marker must be followed, on the
// next line, by a fenced block. Any other fenced block that shows a command line
// ("$ " at the start of a line) is an error: a transcript no marker checks would drift.
func scan(name string, lines []string) ([]block, []file, error) {
	var blocks []block
	var files []file
	for i := 0; i < len(lines); i++ {
		l := strings.TrimRight(lines[i], " \t") // an indented marker is an example, not a marker
		if m := fileMarker.FindStringSubmatch(l); m != nil {
			files = append(files, file{line: i, path: m[1], cmd: m[2]})
			continue
		}
		if fence.MatchString(l) {
			shut := closing(lines, i)
			for j := i + 1; j < shut; j++ {
				if strings.HasPrefix(lines[j], "$ ") {
					return nil, nil, fmt.Errorf("%s:%d: the block shows `%s` with no run marker above it: add <!-- run: COMMAND --> so that the test runs it",
						name, j+1, lines[j])
				}
			}
			i = shut
			continue
		}
		if m := tableMark.FindStringSubmatch(l); m != nil {
			shut := i + 1
			for shut < len(lines) && lines[shut] != "<!-- /table -->" {
				shut++
			}
			if shut == len(lines) {
				return nil, nil, fmt.Errorf("%s:%d: a table marker needs a line <!-- /table --> below it", name, i+1)
			}
			blocks = append(blocks, block{line: i, cmd: m[1], open: i, shut: shut, table: true})
			i = shut
			continue
		}
		m := runMarker.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		b := block{line: i, cmd: m[2]}
		if m[1] != "" {
			fmt.Sscan(m[1], &b.exit)
		}
		if i+1 >= len(lines) || !fence.MatchString(lines[i+1]) {
			return nil, nil, fmt.Errorf("%s:%d: a run marker must be followed by a fenced block (```text)", name, i+1)
		}
		b.open = i + 1
		b.shut = closing(lines, b.open)
		if b.shut == len(lines) {
			return nil, nil, fmt.Errorf("%s:%d: the block under the run marker is never closed", name, i+2)
		}
		blocks = append(blocks, b)
		i = b.shut
	}
	return blocks, files, nil
}

// closing is the line that closes the fenced block opened at line open, or len(lines).
func closing(lines []string, open int) int {
	for j := open + 1; j < len(lines); j++ {
		if strings.TrimSpace(lines[j]) == "```" {
			return j
		}
	}
	return len(lines)
}
