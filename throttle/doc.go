// Package throttle sheds a share of the calls to a dependency that is partly
// overloaded, the lowest priorities first, instead of sending everything (a closed
// breaker) or nothing (an open one).
//
// # The rule
//
// It is Google SRE's client-side throttling. Over a rolling window (Window cut into
// Buckets) a Throttle counts requests (every call the application wanted to make:
// sent ones that reported, and the ones the throttle refused) and accepts (calls the
// dependency handled, whatever it answered: a success, a 404 or a validation error
// all prove it had the capacity; a 429, a 503 or a timeout do not). The share to shed
// is
//
//	p = max(0, (requests − K·accepts) / (requests + 1))
//
// and it is 0 while the window holds fewer than MinRequests requests, or no accept at
// all: a dependency that handles nothing is in a total outage, which the breaker
// handles (it opens, probes and closes), and shedding nearly every call then would
// keep from the breaker the failures it opens on. K (default 2)
// is how much more than the dependency accepts the client keeps sending: with K = 2 a
// dependency that handles half of what it gets sees no shedding at all, one that
// handles a third sees a quarter shed. Lower K sheds earlier and wastes fewer calls;
// higher K reacts later and recovers faster. Shed calls still count as requests, so p
// rises until what is sent is about K times what is accepted. p never exceeds
// 1 − (MinRequests/2)/(requests + 1): about MinRequests/2 calls a window are always
// sent, so that what the dependency does with them stays measured.
//
// # Failures that shedding does not lower
//
// The rule assumes the failures come from load. When a share of the calls fails at
// any load (a bad replica behind a balancer, a flaky network path), shedding raises
// nothing: with a share s accepted and K·s < 1 the rule has no fixed point below 1 and
// climbs until nearly every call is shed, the ones that would have succeeded with
// them. A Throttle watches for that: when shedding half of the calls or more for two
// windows has not brought the accept ratio of the sent calls up to the rule's target,
// it tries counting each accept as 1/s of one (s, the accept ratio it measured, erring
// low), which sheds less; if the accept ratio holds while more is sent, it keeps s
// ([Throttle.LoadIndependent] reports it), and if it falls, the failures came from
// load and the SRE rule stays. s is forgotten when the dependency recovers, when it
// accepts nothing, and by Reset.
//
// # Priorities
//
// A call has a [Priority]: Low, Normal (the zero value), High or Critical. The share p
// is taken from the lowest priorities first: while shedding, the throttle counts the
// mix of priorities it is asked about (forgetting a quarter of it each bucket, but
// keeping at least its last 64 calls, so that a dependency called a few times a bucket
// has its priorities told apart too), and a priority whose share of the mix is d, with
// s of p left after the priorities below it were shed entirely, is refused with
// probability min(1, s/d). With a quarter of the
// calls at each priority and p = 0.5, every Low and Normal call is refused and no High
// or Critical one; at p = 0.9 Critical calls are refused 60% of the time. Until the mix
// holds 16 calls every call is refused with probability p. Because the share refused
// is p whatever the mix, what is sent stays about K times what is accepted.
//
// [Throttle.AllowDraw] takes the random draw from the caller: calls given the same
// draw are shed together. Package callbacks draws once per invocation, so a turn whose
// priority is being shed in part loses all of its calls to the dependency or none.
//
// # Cost
//
// Allow reads one atomic word while nothing is being shed; Report is one
// compare-and-swap on the current bucket's packed counters (epoch, requests and
// accepts in one 64-bit word). Neither allocates nor takes a lock. The random draw
// that decides a refusal is the runtime's per-thread generator, paid only while p > 0.
//
// A Throttle knows nothing of breakers: package callbacks consults it while the
// dependency's breaker is closed, so a total outage still opens the breaker and an
// operator's forced state still overrides the throttle.
package throttle
