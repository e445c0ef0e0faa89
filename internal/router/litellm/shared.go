package litellm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"

	"github.com/kvcheck/kvcheck/internal/sim"
)

// What the LiteLLM proxy emulations (shuffle.go, session.go, promptcache.go) share. LiteLLM is the layer above the
// engines or above a router: its model group's deployments are, here, the fleet's replicas, each
// a deployment of its own (a hosted_vllm/ api_base per replica), so every litellm-* emulation
// picks a replica as LiteLLM picks a deployment. Sources: BerriAI/litellm
// litellm/router_strategy/simple_shuffle.py, litellm/router_utils/pre_call_checks/
// deployment_affinity_check.py and prompt_caching_deployment_check.py,
// litellm/router_utils/prompt_caching_cache.py, litellm/proxy/litellm_pre_call_utils.py
// (_GENERIC_SESSION_ID_HEADER_RE, _SESSION_ID_VALUE_RE), litellm/utils.py
// (is_prompt_caching_valid_prompt, MINIMUM_PROMPT_CACHE_TOKEN_COUNT 1024),
// docs/my-website/docs/proxy/config_settings.md; ROUTERS.md §1, SPEC §6.

// litellmShuffleStream is the PCG stream of simple-shuffle's draws: every litellm-* emulation
// draws its fallback deployment from a PCG seeded with Config.Seed on this stream, one draw per
// request it does not pin, so their routes can be compared draw for draw.
const litellmShuffleStream = 0x6c6974656c6c6d

// litellmPodStream is the stream of the draws that spread requests over proxy pods.
const litellmPodStream = 0x706f6473

// litellmShuffle is simple-shuffle without weights, rpm or tpm: random.choice among the healthy
// deployments, uniform; here IntN(n) on the seeded PCG.
type litellmShuffle struct{ rng *rand.Rand }

func newLitellmShuffle(seed uint64) litellmShuffle {
	return litellmShuffle{rng: rand.New(rand.NewPCG(seed, litellmShuffleStream))}
}

func (s litellmShuffle) pick(n int) int { return s.rng.IntN(n) }

// litellmPods spreads requests over the proxy's pods (a Kubernetes Service: each request to a
// uniformly drawn pod) when the pins are per pod: ProxyPods > 1 without Redis. With Redis, or
// one pod, every request sees the same pins (pod 0).
type litellmPods struct {
	n   int
	rng *rand.Rand
}

func newLitellmPods(s Settings, seed uint64) litellmPods {
	if s.Redis || s.ProxyPods <= 1 {
		return litellmPods{n: 1}
	}
	return litellmPods{n: s.ProxyPods, rng: rand.New(rand.NewPCG(seed, litellmPodStream))}
}

func (p litellmPods) pick() int {
	if p.n <= 1 {
		return 0
	}
	return p.rng.IntN(p.n)
}

// litellmPin is one pinned deployment and when the pin expires (DualCache's TTL: the pin holds
// while now <= expiry).
type litellmPin struct {
	rep    int
	expiry float64
}

// pinStore is one pod's (or Redis's) pins. Expired pins are dropped every pinSweep writes, so
// the store holds about the keys written in the last TTL.
type pinStore[K comparable] struct {
	m      map[K]litellmPin
	writes int
}

const pinSweep = 1 << 12

// get returns the pin of key valid at now among n deployments.
func (s *pinStore[K]) get(key K, now float64, n int) (int, bool) {
	p, ok := s.m[key]
	if !ok || now > p.expiry || p.rep >= n {
		return 0, false
	}
	return p.rep, true
}

func (s *pinStore[K]) set(key K, rep int, expiry, now float64) {
	if s.m == nil {
		s.m = map[K]litellmPin{}
	}
	s.m[key] = litellmPin{rep, expiry}
	s.writes++
	if s.writes%pinSweep == 0 {
		for k, p := range s.m {
			if now > p.expiry {
				delete(s.m, k)
			}
		}
	}
}

var (
	// litellmGenericSessionHeader and litellmSessionValue are _GENERIC_SESSION_ID_HEADER_RE and
	// _SESSION_ID_VALUE_RE (header names are matched in lower case).
	litellmGenericSessionHeader = regexp.MustCompile(`^x-.+-session-id$`)
	litellmSessionValue         = regexp.MustCompile(`^[a-zA-Z0-9_\-]{8,}$`)
)

// litellmSessionID is the session id the proxy puts in metadata.session_id: the
// x-litellm-trace-id header, else x-litellm-session-id, else the first header (by name, a log
// keeps no order) matching ^x-.+-session-id$ whose value matches ^[a-zA-Z0-9_\-]{8,}$, else the
// body's metadata.session_id; "" when none. Plain x-session-id does not match the pattern. The
// Codex/opencode special cases, Anthropic metadata.user_id and W3C baggage are not read.
func litellmSessionID(v *sim.View) string {
	if v == nil {
		return ""
	}
	for _, h := range []string{"x-litellm-trace-id", "x-litellm-session-id"} {
		if s := v.Headers[h]; s != "" {
			return s
		}
	}
	var names []string
	for k := range v.Headers {
		if litellmGenericSessionHeader.MatchString(k) && litellmSessionValue.MatchString(v.Headers[k]) {
			names = append(names, k)
		}
	}
	if len(names) > 0 {
		return v.Headers[slices.Min(names)]
	}
	return v.MetadataSession
}

// check refuses LiteLLM settings no proxy runs with: a pin lifetime (ttl, named by its setting)
// that is not a finite number of seconds above 0, or fewer than one proxy pod.
func check(policy, setting string, ttl float64, s Settings) func(sim.Config, *sim.Trace) error {
	return func(_ sim.Config, t *sim.Trace) error {
		if !(ttl > 0) || math.IsInf(ttl, 0) {
			return &sim.CannotRunError{Policy: policy, Trace: t.Name, Reason: fmt.Sprintf("%s %v: want a number of seconds above 0", setting, ttl)}
		}
		if s.ProxyPods < 1 {
			return &sim.CannotRunError{Policy: policy, Trace: t.Name, Reason: fmt.Sprintf("%d proxy pods: want at least 1", s.ProxyPods)}
		}
		return nil
	}
}
