package leakcheck

import (
	"strings"
	"testing"
)

func TestMain(m *testing.M) { Main(m) }

// A goroutine still blocked when the check runs is reported, with its entry function;
// once it ends it is not.
func TestLeakedReportsARunningGoroutine(t *testing.T) {
	stop := make(chan struct{})
	started := make(chan struct{})
	go parked(started, stop)
	<-started
	leaked := Leaked()
	if len(leaked) != 1 || !strings.Contains(leaked[0], "leakcheck.parked") {
		t.Fatalf("want exactly the parked goroutine, got %d stacks:\n%s", len(leaked), strings.Join(leaked, "\n\n"))
	}
	if got := Leaked("github.com/agentbreaker/agentbreaker/internal/leakcheck.parked"); len(got) != 0 {
		t.Fatalf("an ignored entry function is still reported: %v", got)
	}
	close(stop)
	if got := wait(5e9, nil); len(got) != 0 {
		t.Fatalf("a goroutine that ended is still reported: %v", got)
	}
}

func parked(started, stop chan struct{}) {
	close(started)
	<-stop
}

func TestEntryFunction(t *testing.T) {
	stack := "goroutine 7 [chan receive]:\nexample.com/p.inner(...)\n\t/p/a.go:3\nexample.com/p.(*T).loop(0xc000)\n\t/p/a.go:9 +0x1d\ncreated by example.com/p.Start in goroutine 1\n\t/p/a.go:12 +0x5"
	if got, want := entryFunction(stack), "example.com/p.(*T).loop"; got != want {
		t.Fatalf("entryFunction = %q, want %q", got, want)
	}
}
