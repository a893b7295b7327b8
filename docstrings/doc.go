// Package docstrings tells the model, in each guarded tool's description, what an
// agentbreaker payload means.
//
// The description is the model's only specification of a tool, so one sentence there
// ("may return status unavailable; when it does, tell the user and continue without
// it") changes how the model reacts to an open breaker far more than anything in the
// payload alone.
//
// The sentence is added once. adk-go rebuilds the request before every model call and
// some tools return the same declaration pointer each time, so editing declarations in
// place would add the sentence again at every step; everything here works on copies and
// is idempotent. [New] gives a before-model callback for llmagent.Config or a plugin;
// [Append], [Declarations] and [Request] serve users who build declarations themselves.
//
// Every function here is safe for concurrent use.
package docstrings
