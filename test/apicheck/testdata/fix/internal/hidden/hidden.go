package hidden

type Inner struct {
	Promoted int
	deeper
}

type deeper struct{ Deep bool }

func (Inner) Hello() string { return "" }

func (*Inner) Bye() {}
