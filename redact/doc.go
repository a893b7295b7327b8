// Package redact owns agentbreaker's rules for text that came from outside the
// process: error bodies, error messages and in-band error results written by a
// dependency, and names that enter through configuration, tool registration and
// model routes.
//
// # The two boundaries
//
// Nothing a dependency wrote reaches the model: the model sees agentbreaker's payloads,
// built from the failure's class (package payloads). A failure that is the model's own
// mistake (a validation error, "not found") may keep the tool author's message, passed
// through [Clean]: bounded and stripped of control characters and invalid UTF-8.
//
// Operators (logs, journal rows, admin responses, hook events, span attributes) get a
// [Fingerprint] of upstream text by default: its length and a short hash, next to the
// class and status code the caller already has. The hash lets an operator tell "the
// same error again" from "a new error" and match a log line with the dependency's own
// logs, without the text. A verbatim [Excerpt] is opt-in ([Config.Excerpt]): bounded,
// cleaned, and with common secret shapes masked ([Mask]).
//
// # The hash
//
// By default the hash is the first 12 hex digits (48 bits) of the SHA-256 of the
// text (its first 64 KiB, so a huge body costs no more), unkeyed, so fingerprints agree across replicas and restarts. An unkeyed
// hash of a short, guessable text can be confirmed by guessing it: a body that is only
// a 6-digit code or a known password is not hidden by it. Set [Config.Key] to use
// HMAC-SHA-256 with your key instead; fingerprints then agree only where the key does.
//
// # Names
//
// [CheckName] refuses, and [RepairName] repairs, names that are not valid UTF-8, hold
// control or format characters, or are longer than [MaxNameLen] bytes: such names
// break Prometheus expositions and log parsers, and can smuggle text into payloads.
//
// Everything here is safe for concurrent use.
package redact
