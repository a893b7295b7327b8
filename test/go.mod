module github.com/agentbreaker/agentbreaker/test

go 1.26.5

replace github.com/agentbreaker/agentbreaker => ../
