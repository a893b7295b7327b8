// Command adk is the baseline of the weight table: adk-go alone.
package main

import (
	"log"

	"github.com/agentbreaker/agentbreaker/bench/weight/app"
)

func main() {
	if err := app.Run(); err != nil {
		log.Fatal(err)
	}
}
