package soak

import (
	"fmt"
	"os"
	"strings"
)

const (
	pageBegin = "<!-- soak-figures:begin (written by go -C test test ./soak -soak-page; do not edit) -->"
	pageEnd   = "<!-- soak-figures:end -->"
)

func (f figures) summary() string {
	var sb strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&sb, format+"\n", a...) }
	held := func(ok bool) string {
		if ok {
			return "held"
		}
		return "BROKEN"
	}
	w("| figure | value |")
	w("|---|---|")
	w("| seed | %d |", f.Seed)
	w("| duration | %v |", f.Duration)
	w("| turns (workflow turns) | %d (%d) |", f.Turns, f.Workflow)
	w("| model requests seen by the model | %d |", f.ModelRequests)
	w("| model failovers / unavailable answers | %d / %d |", f.Failovers, f.Unavailable)
	w("| breaker transitions (fleet-wide open spans) | %d (%d) |", f.Transitions, f.OpenIntervals)
	for _, k := range faultKinds {
		w("| faults: %s | %d |", k, f.Faults[k])
	}
	w("| requests reaching orders / stock / ledger / billing | %d / %d / %d / %d |", f.Requests[depOrders], f.Requests[depStock], f.Requests[depLedger], f.Requests[depBilling])
	w("| model requests: primary (gemini) / fallback (openai) | %d / %d |", f.Models["gemini"], f.Models["openai"])
	w("| mutations applied (distinct operations) | %d |", f.Applied)
	w("| every turn answered | %s (%d of %d) |", held(f.Answered == f.Turns), f.Answered, f.Turns)
	w("| replica process: incarnations / turns returned / answered | %d / %d / %d |", f.Incarnations, f.CrashTurns, f.CrashAnswered)
	w("| reconciled at restart: applied / not applied / left for an operator | %d / %d / %d |", f.ReconciledApplied, f.ReconciledNot, f.ReconciledAwaiting)
	w("| journal rows failing their checks | %d |", f.Corrupt)
	w("| no mutation applied twice | %s (%d twice) |", held(f.Duplicates == 0), f.Duplicates)
	w("| every applied mutation carried its key | %s (%d without) |", held(f.KeyMissing == 0), f.KeyMissing)
	w("| no acknowledged intent lost | %s (%d applied without an intent) |", held(f.IntentMissing == 0), f.IntentMissing)
	w("| no intent of an applied mutation says it was not applied | %s (%d) |", held(f.IntentDenied == 0), f.IntentDenied)
	w("| no upstream text reached the model or a user | %s (%d) |", held(f.Leaks == 0), f.Leaks)
	w("| no panic | %s (%d) |", held(f.Panics == 0), f.Panics)
	w("| only probes while open in the fleet | %s (%d other calls) |", held(f.OpenViolations == 0), f.OpenViolations)
	gLim := goroutineSlack + goroutineShare*f.GoroutineMean
	hLim := heapSlack + heapShare*f.HeapMean
	w("| goroutines, growth over the second half | %s (%+.1f, mean %.0f, bound %.1f) |", held(f.GoroutineGrowth <= gLim), f.GoroutineGrowth, f.GoroutineMean, gLim)
	w("| live heap, growth over the second half | %s (%+.2f MiB, mean %.1f MiB, bound %.1f MiB) |", held(f.HeapGrowth <= hLim),
		f.HeapGrowth/(1<<20), f.HeapMean/(1<<20), hLim/(1<<20))
	w("| turn latency p50 / p99 | %.1f ms / %.1f ms |", f.LatencyP50, f.LatencyP99)
	w("| time in the plugin's callbacks per chat turn p50 / p99 | %.2f ms / %.2f ms |", f.PluginP50, f.PluginP99)
	w("| plugin's share of chat turn latency p50 / p99 | %.2f%% / %.2f%% |", 100*f.ShareP50, 100*f.ShareP99)
	return sb.String()
}

// writePage replaces the figures between the markers of path (or appends them).
func writePage(path string, f figures) error {
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	page := string(b)
	block := pageBegin + "\n\n" + f.summary() + "\n" + pageEnd
	// The begin marker is found by its first words, so that rewording its note does
	// not leave a second block behind.
	i, j := strings.Index(page, "<!-- soak-figures:begin"), strings.Index(page, pageEnd)
	if i >= 0 && j > i {
		page = page[:i] + block + page[j+len(pageEnd):]
	} else {
		page += "\n" + block + "\n"
	}
	return os.WriteFile(path, []byte(page), 0o644)
}
