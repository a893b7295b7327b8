package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// progress draws a bar on standard error, only when it is a terminal and only once a
// run has taken long enough to need one.
type progress struct {
	w     io.Writer
	shown bool
	last  int
}

// showAfter is how long a run goes before the bar appears: shorter runs finish before
// anyone would read it.
const showAfter = 300 * time.Millisecond

func newProgress(w io.Writer) *progress {
	f, ok := w.(*os.File)
	if !ok {
		return &progress{}
	}
	st, err := f.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return &progress{}
	}
	return &progress{w: w, last: -1}
}

func (p *progress) update(done float64, elapsed time.Duration) {
	if p.w == nil || elapsed < showAfter {
		return
	}
	pct := int(done * 100)
	if pct == p.last {
		return
	}
	p.last, p.shown = pct, true
	const width = 40
	n := min(max(int(done*width), 0), width)
	fmt.Fprintf(p.w, "\r[%s%s] %3d%%", strings.Repeat("#", n), strings.Repeat(".", width-n), pct)
}

func (p *progress) done() {
	if p.shown {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", 48))
	}
}
