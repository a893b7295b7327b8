package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/breakertest"
	"github.com/agentbreaker/agentbreaker/clock"
	"github.com/agentbreaker/agentbreaker/payloads"
)

// width is the longest line the story prints.
const width = 100

// Indents of the lines under a timed line: a field of an answer, and a wrapped line.
const (
	fieldIndent = "         "
	wrapIndent  = "             "
)

// story prints the incident as it happens, one timed line per event, in the order a
// person needs them: what the model asked for, what the CRM did, what the model got,
// and then what that changed in the breaker. It is safe for concurrent use (the CRM
// answers on the HTTP server's goroutines).
type story struct {
	mu      sync.Mutex
	out     io.Writer
	clk     clock.Clock
	pending []breaker.Event   // state changes waiting for the result of their call
	shown   map[string]string // text printed in full -> the time it was printed
	noted   map[string]bool   // notes already printed
	failed  bool              // a 503 has been shown
	tool    string            // the first tool the model called
	made    counts            // tool calls the model made, and results that held the CRM's text
}

// counts returns how many tool calls the model has made, and how many of the results
// it received held the CRM's own text.
func (s *story) counts() counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.made
}

func newStory(out io.Writer, clk clock.Clock) *story {
	return &story{out: out, clk: clk, shown: map[string]string{}, noted: map[string]bool{}}
}

func (s *story) now() string { return s.clk.Now().Format(time.TimeOnly) }

// printLocked prints text after prefix, wrapped to width with later lines under indent.
func (s *story) printLocked(prefix, text, indent string) {
	for _, line := range wrap(prefix, text, indent) {
		fmt.Fprintln(s.out, line)
	}
}

// event prints one timed line.
func (s *story) event(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.eventLocked(text)
}

func (s *story) eventLocked(text string) { s.printLocked(s.now()+" ", text, wrapIndent) }

// noteLocked prints an explanation under the last line, the first time only.
func (s *story) noteLocked(text string) {
	if s.noted[text] {
		return
	}
	s.noted[text] = true
	s.printLocked(fieldIndent+"(", text+")", fieldIndent+" ")
}

func (s *story) user(question string) { s.event("user: " + question) }

func (s *story) section(text string) { s.event("--- " + text) }

func (s *story) modelCalls(tool, query string, again bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.made.calls++
	line := fmt.Sprintf("model calls %s(query=%q)", tool, query)
	if again {
		line += " again"
	}
	s.eventLocked(line)
	if s.tool == "" {
		s.tool = tool
	} else if tool != s.tool && !again {
		s.noteLocked(tool + " calls the same CRM as " + s.tool + ": the same breaker guards both")
	}
	if again {
		s.noteLocked("models call again after being told not to: the loop guard is there for this")
	}
}

func (s *story) modelSays(text string) breakertest.Step {
	s.event("model: " + text)
	return breakertest.Text(text)
}

// crmFailed shows a 503 leaving the CRM, with its body the first time.
func (s *story) crmFailed() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed {
		s.eventLocked("CRM: 503, the same body")
		return
	}
	s.failed = true
	s.eventLocked(fmt.Sprintf("CRM: 503, body %q", injection))
	s.noteLocked("the tool quotes this body in its error text, as many tools do")
}

// modelGets shows one tool result as the model received it: agentbreaker's answers by
// their text (the words the model reads), in full the first time each text appears;
// any other result as the JSON the model is sent.
func (s *story) modelGets(res map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if strings.Contains(asText(res), injection) {
		s.made.leaked++
		if s.made.leak == "" {
			b, _ := json.Marshal(res)
			s.made.leak = string(b)
		}
	}
	if !payloads.Is(res) {
		b, err := json.Marshal(res)
		if err != nil {
			b = []byte(fmt.Sprint(res))
		}
		s.eventLocked("the model gets " + string(b))
		return
	}
	head := "the model gets agentbreaker's answer"
	if res[payloads.KeyFirm] == true {
		head = "the model gets a firm answer"
	}
	var fresh, seen []string
	var seenAt []string
	for _, key := range []string{payloads.KeyReason, payloads.KeyInstruction} {
		text, _ := res[key].(string)
		if at, ok := s.shown[text]; ok {
			seen, seenAt = append(seen, key), append(seenAt, at)
			continue
		}
		s.shown[text] = s.now()
		fresh = append(fresh, key)
	}
	switch {
	case len(seen) == 2 && seenAt[0] == seenAt[1]:
		head += ": reason and instruction as at " + seenAt[0]
	case len(seen) > 0:
		var refs []string
		for i, key := range seen {
			refs = append(refs, key+" as at "+seenAt[i])
		}
		head += "; " + strings.Join(refs, ", ")
	}
	if len(fresh) > 0 {
		head += ":"
	}
	s.eventLocked(head)
	for _, key := range fresh {
		s.printLocked(fieldIndent+key+": ", res[key].(string), wrapIndent)
	}
	switch {
	case res[payloads.KeyFirm] == true:
		s.noteLocked("the second call to an open dependency in one turn gets the firm answer")
	case res[payloads.KeyResponseType] == payloads.TypeFailed:
		s.noteLocked("in place of the tool's error: nothing the CRM wrote reaches the model")
	case res[payloads.KeyResponseType] == payloads.TypeUnavailable:
		s.noteLocked("the breaker is open: agentbreaker answers in the CRM's place, the CRM is not called")
	}
}

// breakerEvent is the breaker's state-change listener. A probe is shown when it is let
// through, before its result; every other change waits for flush, so that it is
// printed after the result of the call that caused it.
func (s *story) breakerEvent(e breaker.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.To == breaker.HalfOpen {
		s.showLocked(e)
		return
	}
	s.pending = append(s.pending, e)
}

// flush prints the state changes caused by the call whose result was just shown.
func (s *story) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.pending {
		s.showLocked(e)
	}
	s.pending = nil
}

func (s *story) showLocked(e breaker.Event) {
	name := "breaker " + e.Breaker
	wait := e.ReopenAt.Sub(e.At)
	next := e.ReopenAt.Format(time.TimeOnly)
	switch {
	case e.To == breaker.HalfOpen:
		s.eventLocked(fmt.Sprintf("the probe: %s is half-open (cooldown elapsed) and lets this call through", name))
	case e.To == breaker.Open && e.From == breaker.Closed:
		s.eventLocked(fmt.Sprintf("%s opens: %s", name, e.Reason))
		s.eventLocked(fmt.Sprintf("no call reaches the CRM until %s (%s), when one probe may go", next, words(wait)))
	case e.To == breaker.Open && e.From == breaker.HalfOpen:
		s.eventLocked(fmt.Sprintf("%s opens again: %s; the next probe may go at %s, after %s", name, e.Reason, next, words(wait)))
	case e.To == breaker.Open:
		s.eventLocked(fmt.Sprintf("%s stays open until %s: %s", name, next, e.Reason))
	default:
		s.eventLocked(fmt.Sprintf("%s is %s again: %s", name, e.To, e.Reason))
	}
}

// words says a duration as people do: 30s, 1m, 2m30s, 1h.
func words(d time.Duration) string {
	d = d.Round(time.Second)
	h, m, sec := d/time.Hour, d%time.Hour/time.Minute, d%time.Minute/time.Second
	var b strings.Builder
	if h > 0 {
		fmt.Fprintf(&b, "%dh", h)
	}
	if m > 0 {
		fmt.Fprintf(&b, "%dm", m)
	}
	if sec > 0 || b.Len() == 0 {
		fmt.Fprintf(&b, "%ds", sec)
	}
	return b.String()
}

// wrap cuts text into lines of at most width runes, the first after prefix and the
// others after indent, breaking at spaces.
func wrap(prefix, text, indent string) []string {
	var lines []string
	line := prefix
	room := func(w string) bool { return len([]rune(line))+1+len([]rune(w)) <= width }
	first := true
	for _, w := range strings.Fields(text) {
		switch {
		case first:
			line += w
			first = false
		case room(w):
			line += " " + w
		default:
			lines = append(lines, line)
			line = indent + w
		}
	}
	return append(lines, line)
}
