package attach

import "testing"

type box struct{ got []string }

func TestAddCallsTheRegisteredFunction(t *testing.T) {
	if Add(&box{}, "x") {
		t.Fatal("Add with nothing registered = true, want false")
	}
	Register(func(b *box, s string) bool { b.got = append(b.got, s); return true })
	b := &box{}
	if !Add(b, "x") || len(b.got) != 1 {
		t.Fatalf("Add = %v, want the listener added", b.got)
	}
	if Add(b, 1) {
		t.Fatal("Add with another listener type = true, want false")
	}
}
