package sub

type Thing struct{ ID string }

func (Thing) Name() string { return "" }
