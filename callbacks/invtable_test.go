package callbacks

import (
	"fmt"
	"sync"
	"testing"
)

// TestInvTableUnderConcurrentChurn stores, finds and deletes invocations from many
// goroutines at once, many in the same buckets, and checks that every stored
// invocation is found until it is deleted, exactly once, and never after.
func TestInvTableUnderConcurrentChurn(t *testing.T) {
	t.Parallel()
	tab := newInvTable()
	const workers, each = 8, 2000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				id := fmt.Sprintf("w%d-%d", w, i)
				inv := &invocation{id: id}
				if got, loaded := tab.loadOrStore(inv); loaded || got != inv {
					t.Errorf("%s: stored once, loaded=%v", id, loaded)
					return
				}
				if again, loaded := tab.loadOrStore(&invocation{id: id}); !loaded || again != inv {
					t.Errorf("%s: a second store must find the first", id)
					return
				}
				if tab.load(id) != inv {
					t.Errorf("%s: not found after storing", id)
					return
				}
				if i%3 == 0 {
					continue // left in the table, among the others' deletions
				}
				if tab.loadAndDelete(id) != inv {
					t.Errorf("%s: delete did not return it", id)
					return
				}
				if tab.load(id) != nil || tab.loadAndDelete(id) != nil {
					t.Errorf("%s: found after deleting", id)
					return
				}
			}
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	tab.each(func(inv *invocation) bool {
		if seen[inv.id] {
			t.Errorf("%s listed twice", inv.id)
		}
		seen[inv.id] = true
		return true
	})
	want := workers * ((each + 2) / 3)
	if len(seen) != want {
		t.Errorf("%d invocations left, want %d", len(seen), want)
	}
}
