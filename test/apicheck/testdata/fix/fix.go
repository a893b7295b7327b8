// Package fix holds one of each kind of feature test/apicheck lists.
package fix

import (
	"context"
	"io"

	"example.com/fix/internal/hidden"
	"example.com/fix/sub"
)

const (
	Untyped          = "text"
	Typed      Level = 2
	Ratio            = 0.25
	unexported       = 1
)

var Default = Config{Name: "x"}

type Level int

func (l Level) String() string { return "" }

func (l *Level) Set(string) error { return nil }

type Config struct {
	Name    string `json:"name"`
	Limits  map[string][]*sub.Thing
	OnEvent func(ctx context.Context, name string, args ...any) (ok bool, err error)
	Events  chan<- struct{ At int64 }
	Pipes   chan (<-chan int)
	io.Reader
	hidden.Inner
	secret int
}

type Source interface {
	Get(ctx context.Context, key string) ([]byte, error)
	io.Closer
	private()
}

type Number interface {
	~int | ~float64
}

type Pair[K comparable, V any] struct {
	Key K
	Val V
}

func (p Pair[K, V]) Swap() Pair[K, V] { return p }

type Alias = sub.Thing

func New[T Number](vals ...T) (*Pair[string, T], error) { return nil, nil }

func Run(context.Context, [4]byte) {}
