package admin

import "github.com/agentbreaker/agentbreaker/bulkhead"

// BulkheadGroup shows a bulkhead group on the admin page: for every dependency that has
// a bulkhead, its size and how many calls hold a slot now. Pass it as Config.Bulkheads,
// with the group the tool callbacks use (callbacks.(*Callbacks).Bulkheads()).
//
// The group is read at each request, so the page is always current. A dependency
// without a limit has no bulkhead and is not listed; a default-sized bulkhead appears
// once its dependency has been called. Waiting is always 0: these bulkheads refuse a
// call at once rather than queue it. A nil group shows no bulkheads.
func BulkheadGroup(g *bulkhead.Group) Bulkheads {
	if g == nil {
		return nil
	}
	return bulkheadGroup{g}
}

type bulkheadGroup struct{ g *bulkhead.Group }

func (b bulkheadGroup) BulkheadStatus() []BulkheadStatus {
	all := b.g.Bulkheads() // sorted by dependency
	out := make([]BulkheadStatus, len(all))
	for i, bh := range all {
		s := bh.Snapshot()
		out[i] = BulkheadStatus{Dependency: s.Name, InFlight: s.InUse, Limit: s.Limit}
	}
	return out
}
