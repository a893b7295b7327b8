package admission_test

import (
	"errors"
	"fmt"

	"github.com/agentbreaker/agentbreaker/admission"
	"github.com/agentbreaker/agentbreaker/dependencymap"
)

// The controller keeps queued work in a journal (a *journal.Journal on
// journal/sqlite or journal/postgres satisfies QueueStore); without one, New names the
// missing field. The queue at work, on SQLite, is the test module's example
// (test/admission/example_test.go): a database driver in this package's tests would
// reach the go.sum of every program that imports callbacks.
func ExampleNew() {
	deps := dependencymap.MustNew(dependencymap.Config{})
	_, err := admission.New(admission.Config{Map: deps})
	fmt.Println(err)
	var ce *admission.ConfigError
	fmt.Println(errors.As(err, &ce), ce.Field)
	// Output:
	// admission: Journal = nil: is required
	// true Journal
}
