package throttle

// fleetSums adds other replicas' counts to this replica's window (package fleet).
type fleetSums struct {
	other func() Counts
}

func (f *fleetSums) sums(t *Throttle, e int64) (uint64, uint64) {
	req, acc := t.win.sums(e)
	o := f.other()
	return req + o.Requests, acc + o.Accepts
}

// ShareWith makes p come from the fleet's window: other returns the counts of every
// other replica over the same window (package fleet keeps them from its sync), and p is
// computed over the sum, so every replica sheds the same share. other is called each
// time p is computed, concurrently, and must be quick and safe for that. A nil other
// goes back to this replica's window alone.
func (t *Throttle) ShareWith(other func() Counts) {
	if other == nil {
		t.fleet.Store(nil)
		return
	}
	t.fleet.Store(&fleetSums{other: other})
}
