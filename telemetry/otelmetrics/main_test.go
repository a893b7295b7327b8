package otelmetrics_test

import (
	"testing"

	"github.com/agentbreaker/agentbreaker/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }
