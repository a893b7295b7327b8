module github.com/agentbreaker/agentbreaker/bench

go 1.26.5

require (
	github.com/agentbreaker/agentbreaker v0.0.0
	github.com/failsafe-go/failsafe-go v0.9.8
	github.com/sony/gobreaker/v2 v2.4.0
)

require (
	github.com/bits-and-blooms/bitset v1.24.4 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)

replace github.com/agentbreaker/agentbreaker => ../
