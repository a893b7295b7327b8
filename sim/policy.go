package sim

import (
	"time"

	"github.com/agentbreaker/agentbreaker/breaker"
	"github.com/agentbreaker/agentbreaker/dependencymap/depfile"
)

// DefaultPolicy is the user's policy when the scenario gives none: the first design
// document's "50% error rate over a 20-call window, 30-second cool-down".
//
// The window is the last 20 calls (a count window), and the cooldown is the
// document's fixed 30 s (tools grow theirs by default).
var DefaultPolicy = depfile.Policy{
	FailureRateThreshold: 0.5,
	MinimumCalls:         20,
	WindowCalls:          20,
	Cooldown:             "30s",
	CooldownMultiplier:   1,
}

// UserPolicy returns the scenario's policy as the breaker will run it: the file's fields
// over DefaultPolicy's, then the breaker's defaults, adjusted for simulation (simPolicy).
func (s Scenario) UserPolicy() (breaker.Policy, error) {
	cfg, err := depfile.File{Default: s.filePolicy()}.Config()
	if err != nil {
		return breaker.Policy{}, policyError(err)
	}
	return simPolicy(cfg.Default), nil
}

// filePolicy is the scenario's policy over DefaultPolicy, in the file's form.
func (s Scenario) filePolicy() depfile.Policy {
	fp := DefaultPolicy
	over := s.Policy
	if over.FailureRateThreshold != 0 {
		fp.FailureRateThreshold = over.FailureRateThreshold
	}
	if over.MinimumCalls != 0 {
		fp.MinimumCalls = over.MinimumCalls
	}
	if over.Window != "" {
		fp.Window = over.Window
	}
	if over.Cooldown != "" {
		fp.Cooldown = over.Cooldown
	}
	// Fields DefaultPolicy leaves to the breaker's defaults.
	fp.Buckets, fp.SlowCallThreshold, fp.SlowCallRateThreshold = over.Buckets, over.SlowCallThreshold, over.SlowCallRateThreshold
	fp.CooldownMultiplier, fp.MaxCooldown, fp.Jitter = over.CooldownMultiplier, over.MaxCooldown, over.Jitter
	fp.HalfOpenProbes, fp.ProbeLease, fp.MaxRetryAfter, fp.Version = over.HalfOpenProbes, over.ProbeLease, over.MaxRetryAfter, over.Version
	return fp
}

// DefaultsPolicy is agentbreaker's default policy as the simulator runs it.
func DefaultsPolicy() breaker.Policy { return simPolicy(breaker.Policy{}) }

// simPolicy is every policy the simulator runs, with defaults applied and jitter off.
//
// Jitter exists so that a fleet that tripped together does not probe together; one
// simulated process gains nothing from it, and the breakers built by dependencymap draw
// it from math/rand/v2's unseeded generator, which would make two runs with the same seed
// differ. Turning it off shifts each probe earlier by at most Jitter × cooldown (3 s of
// a 30 s cooldown at the default 0.1).
func simPolicy(p breaker.Policy) breaker.Policy {
	p = p.WithDefaults()
	p.Jitter = -1
	return p
}

// consecutivePolicy is the comparison breaker's: gobreaker's defaults.
type consecutivePolicy struct {
	// MaxConsecutive: it trips when consecutive failures exceed this (gobreaker: > 5).
	MaxConsecutive int
	// Open is how long it stays open before one probe (gobreaker's Timeout: 60 s).
	Open time.Duration
}

var gobreakerDefaults = consecutivePolicy{MaxConsecutive: 5, Open: 60 * time.Second}
