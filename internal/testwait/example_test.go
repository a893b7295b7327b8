package testwait_test

import (
	"fmt"
	"testing"

	"github.com/agentbreaker/agentbreaker/internal/testwait"
)

func TestRecvGetsTheValue(t *testing.T) {
	ch := make(chan int, 1)
	ch <- 7
	if got := testwait.Recv(t, ch, "the value"); got != 7 {
		t.Fatalf("got %d", got)
	}
}

func ExampleRecv() {
	t := &testing.T{} // in a test, the test's own *testing.T
	done := make(chan string, 1)
	go func() { done <- "served" }()
	fmt.Println(testwait.Recv(t, done, "the server's answer"))
	// Output: served
}
