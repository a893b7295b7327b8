package fleet_test

const childEnv = "AGENTBREAKER_FLEET_CHILD"

func replicaChild() {}
