package payloads

import (
	"math"
	"strconv"

	"github.com/agentbreaker/agentbreaker/classify"
)

// TypeShed is the response type of [Shed].
const TypeShed = classify.PayloadPrefix + "shed"

// StatusOverloaded is the status of [Shed]: the dependency is up but cannot take all
// it gets, and this call was one of the share held back.
const StatusOverloaded = "overloaded"

// KeyCallSent says whether the call reached the dependency: false in [Shed].
const KeyCallSent = "call_sent"

// KeyShedPercent is the share of the dependency's calls being held back, in percent
// (Info.Shed), in [Shed]; absent when the share is not known.
const KeyShedPercent = "shed_percent"

// Shed is the payload for a call the throttle held back while its dependency is
// overloaded: this call was not sent, and nothing can have been done. Class is the
// failure the dependency has been answering with (429, 503, …) and defaults to
// http_429. Its words follow Info.Shed, the share held back: under half, most calls
// are still sent and a later try is advised (retry_advised: true); from half up, most
// calls are held back, the model is told to continue without the tool in this turn,
// and no retry is advised; a share not known claims neither. The loop guard's firm
// answer never advises a retry. RetryAfter, when the dependency stated a delay, says
// how much later.
func Shed(in Info) map[string]any {
	class := defaultClass(in.Class, classify.ClassHTTP429)
	share := in.Shed
	if math.IsNaN(share) || share < 0 {
		share = 0
	}
	share = min(share, 1)
	name, why := cleanName(in.Dependency), phrase(class)
	var reason string
	switch {
	case share == 0:
		reason = name + " is partly overloaded (" + why + "), so this call was not sent: only a share of calls is being let through."
	case share < 0.5:
		reason = name + " is partly overloaded (" + why + "), so this call was not sent: about " + shedPercentText(share) +
			" of calls to it are being held back; most calls to it are still sent."
	case share < 1:
		reason = name + " is overloaded (" + why + "), so this call was not sent: about " + shedPercentText(share) +
			" of calls to it are being held back, so most calls to it are not sent now."
	default:
		reason = name + " is overloaded (" + why + "), so this call was not sent: every call to it is being held back for now."
	}
	m := build(TypeShed, StatusOverloaded, class, reason, in)
	m[KeyCallSent] = false
	if share > 0 {
		m[KeyShedPercent] = shedPercent(share)
	}
	mostHeld := share >= 0.5
	m[KeyRetryAdvised] = !in.Firm && !mostHeld
	switch {
	case in.Firm:
		// build's firm instruction: stop calling it in this turn.
	case in.Cached != nil && in.Cached.Result != nil:
		m[KeyInstruction] = "Do not repeat this call right away. Answer with the cached result, telling the user how old it is; a later request may get fresh data."
	case mostHeld:
		m[KeyInstruction] = "Do not call this tool again in this turn: most calls to it are being held back. Continue without this information and tell the user it is unavailable for now."
	case seconds(in.RetryAfter) > 0:
		m[KeyInstruction] = "Do not repeat this call before the time given. Continue without this information for now, or call the tool once more after that."
	case share > 0:
		m[KeyInstruction] = "Do not repeat this call right away. Continue without this information, or try once more later in the conversation; most calls to it are still sent."
	default:
		m[KeyInstruction] = "Do not repeat this call right away. Continue without this information, or try once more later in the conversation."
	}
	return m
}

// shedPercent is share in whole percent, on its side of one half: a share under
// half never reads as 50, one at or above it never as 49, a share above 0 never as 0
// and one below 1 never as 100.
func shedPercent(share float64) int64 {
	p := int64(math.Round(share * 100))
	switch {
	case share < 0.5:
		p = min(max(p, 1), 49)
	case share < 1:
		p = min(max(p, 50), 99)
	}
	return p
}

func shedPercentText(share float64) string {
	return strconv.FormatInt(shedPercent(share), 10) + "%"
}
