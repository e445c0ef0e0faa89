package litellm

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/sim"
	"github.com/kvcheck/kvcheck/internal/sim/simtest"
)

// A second model of litellm-session-affinity, written from the router's description (ROUTERS.md
// §1, deployment_affinity_check.py), not from the emulation's code: plain maps and strings. It
// routes over simtest.RefFleet, whose caches never fill.

// refSessionAffinity is LiteLLM's session_affinity as ROUTERS.md §1 and
// deployment_affinity_check.py describe it: the session id from x-litellm-trace-id, then
// x-litellm-session-id, then a header named x-<something>-session-id (the alphabetically first
// such) with an id of 8 or more letters, digits, "_" or "-", then metadata.session_id; a pod
// drawn per request when there are several and no Redis; the pod's live pin for the id, else a
// shuffle draw; the pin (re)written for TTL seconds from now whenever there is an id.
type refSessionAffinity struct {
	ttl     float64
	pods    int
	podRNG  *rand.Rand
	shuffle *rand.Rand
	pins    map[[2]string][2]float64 // (pod, id) -> (deployment, expiry)
}

var refIDValue = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

func (m *refSessionAffinity) id(v *sim.View) string {
	if s := v.Headers["x-litellm-trace-id"]; s != "" {
		return s
	}
	if s := v.Headers["x-litellm-session-id"]; s != "" {
		return s
	}
	var names []string
	for k, val := range v.Headers {
		if strings.HasPrefix(k, "x-") && strings.HasSuffix(k, "-session-id") && len(k) > len("x--session-id") && len(val) >= 8 && refIDValue.MatchString(val) {
			names = append(names, k)
		}
	}
	if len(names) > 0 {
		sort.Strings(names)
		return v.Headers[names[0]]
	}
	return v.MetadataSession
}

func (m *refSessionAffinity) route(r *sim.Request, n int) int {
	pod := 0
	if m.pods > 1 {
		pod = m.podRNG.IntN(m.pods)
	}
	id := m.id(r.View)
	key := [2]string{fmt.Sprint(pod), id}
	if id != "" {
		if p, ok := m.pins[key]; ok && r.Arrival <= p[1] && int(p[0]) < n {
			m.pins[key] = [2]float64{p[0], r.Arrival + m.ttl}
			return int(p[0])
		}
	}
	pick := m.shuffle.IntN(n)
	if id != "" {
		m.pins[key] = [2]float64{float64(pick), r.Arrival + m.ttl}
	}
	return pick
}

// sessionTraffic gives the random traffic's requests session ids in the ways clients send them:
// LiteLLM's headers, a vendor header (long or too short), plain x-session-id, metadata, or none,
// over twelve sessions.
func sessionTraffic(tr *sim.Trace, seed uint64) *sim.Trace {
	rng := rand.New(rand.NewPCG(seed, 99))
	for i := range tr.Requests {
		id := fmt.Sprintf("sess-%04d", rng.IntN(12))
		v := sim.StringChat("t")
		switch rng.IntN(7) {
		case 0:
			v.Headers = map[string]string{"x-litellm-session-id": id}
		case 1:
			v.Headers = map[string]string{"x-litellm-trace-id": id, "x-litellm-session-id": "other-id"}
		case 2:
			v.Headers = map[string]string{"x-acme-session-id": id}
		case 3:
			v.Headers = map[string]string{"x-acme-session-id": id[5:]} // 4 characters: no id
		case 4:
			v.Headers = map[string]string{"x-session-id": id}
		case 5:
			v.MetadataSession = id
		}
		tr.Requests[i].View = v
	}
	tr.Format = "requests"
	return tr
}

// TestLiteLLMSessionAffinityModel: litellm-session-affinity agrees with refSessionAffinity on
// routes and hits over random traffic, one pod, several pods with and without Redis, short TTLs.
func TestSessionAffinityModel(t *testing.T) {
	variants := []struct {
		name string
		set  func(*Settings)
	}{
		{"shipped", func(*Settings) {}},
		{"ttl 5s", func(l *Settings) { l.AffinityTTLSecs = 5 }},
		{"3 pods no redis ttl 20s", func(l *Settings) { l.ProxyPods, l.AffinityTTLSecs = 3, 20 }},
		{"3 pods redis", func(l *Settings) { l.ProxyPods, l.Redis = 3, true }},
	}
	for _, v := range variants {
		for seed := range uint64(3) {
			t.Run(fmt.Sprintf("%s/seed%d", v.name, seed), func(t *testing.T) {
				tr := sessionTraffic(simtest.RandomTraffic(seed, 300, simtest.Block), seed)
				for i := range tr.Requests {
					tr.Requests[i].Arrival *= 10
				}
				c := simtest.RoomyConfig(seed, 3, tr.Requests[150].Arrival)
				l := Shipped()
				v.set(&l)
				m := &refSessionAffinity{ttl: l.AffinityTTLSecs, shuffle: rand.New(rand.NewPCG(seed, litellmShuffleStream)), pins: map[[2]string][2]float64{}}
				if l.ProxyPods > 1 && !l.Redis {
					m.pods, m.podRNG = l.ProxyPods, rand.New(rand.NewPCG(seed, litellmPodStream))
				}
				e := simtest.NewRefFleet(simtest.Block, c.Model)
				want := simtest.Replay(tr, c, m.route, e)
				got := simtest.Routes(t, tr, c, emulation("litellm-session-affinity", l))
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("litellm-session-affinity against the second model (-model +emulation):\n%s", d)
				}
				if slices.Max(want.Hits) == 0 || slices.Max(want.Routes) < 3 {
					t.Errorf("the traffic should hit and reach the added replica: hits max %d, routes max %d", slices.Max(want.Hits), slices.Max(want.Routes))
				}
			})
		}
	}
}

// refShuffle is simple_shuffle without weights (BerriAI/litellm@1116dd5
// litellm/router_strategy/simple_shuffle.py, the last branch): random.choice over the healthy
// deployments, from the seeded stream the emulations share (the stand-in for Python's random).
type refShuffle struct{ rng *rand.Rand }

func (m *refShuffle) route(_ *sim.Request, n int) int { return m.rng.IntN(n) }

// refPromptCache is PromptCachingDeploymentCheck (BerriAI/litellm@00a9877
// litellm/router_utils/pre_call_checks/prompt_caching_deployment_check.py): on a chat of at least
// 1,024 tokens with a cacheable prefix (up to the last cache_control marker), the deployment
// the prefix's key was last written with, if written in the last TTL on this pod's cache; else
// simple-shuffle. On success (the request's end) the key is written with the deployment that
// served it. A policy over the fleet, since writes wait for the end of a request.
type refPromptCache struct {
	shuffle *rand.Rand
	pods    int
	podRNG  *rand.Rand
	ttl     float64
	pins    map[[2]uint64][2]float64 // (pod, key) -> (deployment, expiry)
	podOf   map[int]int
}

func (m *refPromptCache) Route(f *sim.Pool, j *sim.Job) (int, string) {
	pod := 0
	if m.pods > 1 {
		pod = m.podRNG.IntN(m.pods)
	}
	m.podOf[j.Seq()] = pod
	r := j.Request()
	if v := r.View; v.Chat && v.CacheKey != 0 && r.InputTokens >= 1024 {
		if p, ok := m.pins[[2]uint64{uint64(pod), v.CacheKey}]; ok && j.Arrival() <= p[1] && int(p[0]) < f.Size() {
			return int(p[0]), "cache-key"
		}
	}
	return m.shuffle.IntN(f.Size()), "random"
}

func (m *refPromptCache) Prefilled(*sim.Job) {}

func (m *refPromptCache) Finished(j *sim.Job) {
	pod := m.podOf[j.Seq()]
	delete(m.podOf, j.Seq())
	if r := j.Request(); r.View.Chat && r.View.CacheKey != 0 && r.InputTokens >= 1024 {
		m.pins[[2]uint64{uint64(pod), r.View.CacheKey}] = [2]float64{float64(j.Replica()), j.Done() + m.ttl}
	}
}

// TestShuffleAndPromptCacheModels: litellm-simple-shuffle and litellm-prompt-caching agree with
// refShuffle and refPromptCache route by route on random traffic: chats, some marked on a shared
// system prompt, about half of 1,024 tokens or more, a short TTL, one pod and three.
func TestShuffleAndPromptCacheModels(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			tr := simtest.RandomTraffic(seed, 300, simtest.Block)
			rng := rand.New(rand.NewPCG(seed, 0x76696577))
			for i := range tr.Requests {
				r := &tr.Requests[i]
				r.Arrival *= 10
				r.View = sim.StringChat("system", "user")
				if len(r.Blocks) > 0 && r.Blocks[0] < 10000 && rng.IntN(4) > 0 {
					r.View.CacheKey = 1 + r.Blocks[0]
				}
				r.InputTokens *= 40
			}
			tr.Format = "requests"
			c := simtest.RoomyConfig(seed, 3, tr.Requests[150].Arrival)
			e := simtest.NewRefFleet(simtest.Block, c.Model)
			want := simtest.Replay(tr, c, (&refShuffle{rng: rand.New(rand.NewPCG(seed, litellmShuffleStream))}).route, e)
			if d := cmp.Diff(want, simtest.Routes(t, tr, c, emulation("litellm-simple-shuffle", Shipped()))); d != "" {
				t.Errorf("litellm-simple-shuffle against the second model (-model +emulation):\n%s", d)
			}
			pinned := 0
			for _, pods := range []int{1, 3} {
				l := Shipped()
				l.ProxyPods, l.PromptCacheTTLSecs = pods, 20
				m := &refPromptCache{shuffle: rand.New(rand.NewPCG(seed, litellmShuffleStream)), pods: pods, ttl: 20,
					pins: map[[2]uint64][2]float64{}, podOf: map[int]int{}}
				if pods > 1 {
					m.podRNG = rand.New(rand.NewPCG(seed, litellmPodStream))
				}
				want, wantWhy := simtest.Run(t, tr, c, simtest.Model("model", true, m))
				got, why := simtest.Run(t, tr, c, emulation("litellm-prompt-caching", l))
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("%d pods: litellm-prompt-caching against the second model (-model +emulation):\n%s", pods, d)
				}
				for k := range why {
					if why[k] == "cache-key" {
						pinned++
					}
					if why[k] != wantWhy[k] {
						t.Fatalf("%d pods: request %d: reason %q, the second model's %q", pods, k, why[k], wantWhy[k])
					}
				}
			}
			if pinned == 0 {
				t.Error("no request found a pin: the traffic does not test the pins")
			}
		})
	}
}
