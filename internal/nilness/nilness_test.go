package nilness

import "testing"

type source interface{ Scope(string) string }

type fleetLike struct{}

func (*fleetLike) Scope(string) string { return "fleet" }

func TestAbsent(t *testing.T) {
	var nilFleet *fleetLike
	var typedNil source = nilFleet
	tests := []struct {
		name string
		v    any
		want bool
	}{
		{name: "nil interface", v: nil, want: true},
		{name: "interface holding a nil pointer", v: typedNil, want: true},
		{name: "nil map", v: map[string]int(nil), want: true},
		{name: "nil func", v: (func())(nil), want: true},
		{name: "pointer", v: &fleetLike{}, want: false},
		{name: "value", v: 3, want: false},
		{name: "empty string", v: "", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Absent(tt.v); got != tt.want {
				t.Fatalf("Absent(%#v) = %v, want %v", tt.v, got, tt.want)
			}
		})
	}
}
