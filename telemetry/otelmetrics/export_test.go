package otelmetrics

// InstrumentNames returns the name of every row of the instrument table, for the
// tests that must cover each.
func InstrumentNames() []string {
	out := make([]string, 0, numInst)
	for _, r := range instruments {
		out = append(out, r.name)
	}
	return out
}
