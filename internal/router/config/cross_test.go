package config

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/catalog"
)

// pairwisePodChecks is the definition podChecks must agree with: every publishing engine set
// against every llm-d router that dials pods, one finding per engine and code (per router for
// the block size), the first disagreement named and the others counted. Quadratic, so only
// for tests.
func pairwisePodChecks(engines []*engine, podSubs []*subscriber, where func(string, pos) string) []podFinding {
	var out []podFinding
	seen := map[string]int{}
	once := func(key string, f podFinding) {
		if i, ok := seen[key+f.code]; ok {
			out[i].count++
			return
		}
		f.count = 1
		seen[key+f.code] = len(out)
		out = append(out, f)
	}
	for ei, e := range engines {
		if !e.publishes() {
			continue
		}
		ep := e.kv.endpointOrDefault()
		if len(podSubs) == 0 && !binds(ep) && !strings.HasPrefix(ep, "inproc") && !strings.HasPrefix(ep, "ipc") {
			out = append(out, podFinding{file: e.file, code: "vllm/endpoint-connects", at: e.kv.at, loc: e.name, count: 1,
				msg:  fmt.Sprintf("KV-event endpoint %s has no * or ::, so vLLM connects to it: whatever consumes the events must bind that address", ep),
				hint: "if the consumer dials the engine, set \"endpoint\": \"tcp://*:5557\" in --kv-events-config"})
		}
		ek := fmt.Sprintf("e%d", ei)
		for si, s := range podSubs {
			if !binds(ep) {
				once(ek, podFinding{file: e.file, code: "llm-d/engine-connects", at: e.kv.at, loc: e.name,
					msg:  fmt.Sprintf("the llm-d router (%s) dials every pod, but endpoint %s has no * or ::, so vLLM connects instead of binding and the router receives nothing", where(s.file, s.at), ep),
					hint: fmt.Sprintf("set \"endpoint\": \"tcp://*:%d\" in --kv-events-config", s.socketPort)})
			} else if p, ok := endpointPort(ep); ok && s.socketPort != 0 && p != s.socketPort {
				once(ek, podFinding{file: e.file, code: "llm-d/socket-port", at: e.kv.at, loc: e.name,
					msg:  fmt.Sprintf("the engine publishes on port %d but the llm-d router (%s) dials podDiscoveryConfig.socketPort %d", p, where(s.file, s.at), s.socketPort),
					hint: fmt.Sprintf("set \"endpoint\": \"tcp://*:%d\" in --kv-events-config, or podDiscoveryConfig.socketPort: %d", s.socketPort, p)})
			}
			topic := ""
			if e.kv.topicSet {
				topic = e.kv.topic
			}
			if !strings.HasPrefix(topic, s.topicFilter) {
				once(ek, podFinding{file: e.file, code: "llm-d/topic-filter", at: e.kv.at, loc: e.name,
					msg:  fmt.Sprintf("topic %q does not start with the llm-d router's topicFilter %q (%s): the subscription drops every event", topic, s.topicFilter, where(s.file, s.at)),
					hint: fmt.Sprintf("set \"topic\": \"%s$(POD_IP):8000@<model>\" in --kv-events-config", s.topicFilter)})
			}
			if b, ok := e.flag("--block-size"); ok && s.blockSize != 0 {
				if n, err := strconv.Atoi(b.text); err == nil && n != s.blockSize {
					once(fmt.Sprintf("s%d", si), podFinding{file: s.file, code: "llm-d/block-size-differs", at: s.at, loc: s.blockSizeKey,
						msg:  fmt.Sprintf("%s %d differs from the engine's --block-size %d (%s): the producer README (@ebab687) says they need not match, the June 2026 guide says they must", s.blockSizeKey, s.blockSize, n, where(e.file, b.at)),
						hint: fmt.Sprintf("set %s: %d to be safe with older releases", s.blockSizeKey, n)})
				}
			}
			if s.replayPort != 0 && !e.version.IsZero() && e.version.Less(catalog.Version{Major: 0, Minor: 26}) {
				once(ek, podFinding{file: e.file, code: "vllm/replay-needs-0.26", at: e.kv.at, loc: e.name,
					msg:  fmt.Sprintf("the llm-d router (%s) asks for replay on port %d, but image %s is vLLM %s: replay needs 0.26 or newer", where(s.file, s.at), s.replayPort, e.image, e.version),
					hint: "use a vLLM 0.26+ image, or drop replaySocketPort"})
			}
		}
	}
	return out
}

// randomPods makes engines and pod-dialling routers whose endpoints, ports, topics, block sizes
// and versions are drawn from small sets, so that every check both agrees and disagrees often.
func randomPods(r *rand.Rand, nEngines, nSubs int) ([]*engine, []*subscriber) {
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	var engines []*engine
	for i := range nEngines {
		e := &engine{file: fmt.Sprintf("e%d.yaml", i%7), at: pos{line: i + 1}, name: fmt.Sprintf("vllm-%d", i), flags: map[string]token{}}
		if r.IntN(8) > 0 {
			e.kv = &kvEvents{at: pos{line: i + 1, col: 3}, enable: r.IntN(6) > 0,
				endpoint: pick("tcp://*:5557", "tcp://*:5556", "tcp://[::]:5557", "tcp://10.0.0.1:5557", "ipc:///tmp/x", "tcp://*:x", ""),
				topicSet: r.IntN(4) > 0, topic: pick("kv@", "kv@10.0.0.1:8000@m", "", "k", "other@", "kv@$(POD_IP)")}
			e.kv.endpointSet = e.kv.endpoint != ""
		}
		if r.IntN(3) > 0 {
			e.flags["--block-size"] = token{text: pick("16", "64", "32", "x", "0"), at: pos{line: i + 1, col: 9}}
		}
		if r.IntN(2) > 0 {
			e.image = "vllm/vllm-openai:" + pick("v0.25.1", "v0.26.0", "v0.11.0")
			e.version, _ = vllmImageVersion(e.image)
		}
		engines = append(engines, e)
	}
	var subs []*subscriber
	for i := range nSubs {
		subs = append(subs, &subscriber{file: fmt.Sprintf("epp%d.yaml", i%5), at: pos{line: 100 + i}, discoverPods: true,
			topicFilter: pick("kv@", "", "kv@10.", "kv@10.0.0.1:8000@m", "kv", "x", "kv@10.0.0.1:8000@mm"),
			socketPort:  []int{0, 5557, 5556, 6000}[r.IntN(4)],
			replayPort:  []int{0, 0, 5558}[r.IntN(3)],
			blockSize:   []int{0, 16, 64}[r.IntN(3)], blockSizeKey: pick("blockSize", "blockSizeTokens")})
	}
	return engines, subs
}

func TestPodChecksAgreeWithPairwise(t *testing.T) {
	where := func(file string, at pos) string { return fmt.Sprintf("%s:%d", file, at.line) }
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 23))
		engines, subs := randomPods(r, r.IntN(30), r.IntN(12))
		got := podChecks(engines, subs, where)
		want := pairwisePodChecks(engines, subs, where)
		for i := range got {
			got[i].order = [3]int{}
		}
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(podFinding{}, pos{})); diff != "" {
			t.Fatalf("seed %d: %d engines, %d routers: podChecks differs from the pairwise definition (-want +got):\n%s", seed, len(engines), len(subs), diff)
		}
	}
}

// TestCrossCheckLinear keeps the checks across files linear in the number of files: a run of
// 4n engines, n/2 pod-dialling routers, gateways and SGLang workers against n routers does at
// most about 4 times the work of a run of n of each. Work is counted in heap allocations (the
// same for the same input on every machine, unlike time): pairing every engine with every
// router allocated once per pair (a key for each), 16 times as much for 4 times the files.
// Every engine's topic disagrees with every router's filter, so each pair has a finding to
// fold.
func TestCrossCheckLinear(t *testing.T) {
	allocs := func(n int) uint64 {
		var facts []*Facts
		for i := range n {
			path := fmt.Sprintf("f%d.yaml", i)
			c := &Facts{}
			c.engines = append(c.engines, &engine{file: path, at: pos{line: 1}, name: "vllm", flags: map[string]token{},
				kv: &kvEvents{at: pos{line: 2}, enable: true, endpoint: "tcp://*:5557", endpointSet: true, topic: "other@", topicSet: true}})
			if i%2 == 0 {
				c.subscribers = append(c.subscribers, &subscriber{file: path, at: pos{line: 3}, discoverPods: true,
					topicFilter: fmt.Sprintf("kv%d@", i), socketPort: 5557})
			}
			c.routers = append(c.routers, kvRouter{file: path, kind: "dynamo", names: []string{fmt.Sprintf("router-%d", i)}, at: pos{line: 4}})
			c.gateways = append(c.gateways, &gatewayGroup{file: path, at: pos{line: 5}, group: "g", host: fmt.Sprintf("nothere-%d.svc", i)})
			c.sglang = append(c.sglang, &sglangGateway{file: path, at: pos{line: 6}, flags: map[string]token{},
				workers: []token{{text: fmt.Sprintf("http://nothere-%d:8000", i)}}})
			facts = append(facts, c)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		first := 0
		Cross(facts, func(path string, f *Finding) {
			if path == "f0.yaml" {
				first++
			}
		})
		runtime.ReadMemStats(&after)
		if first != 1 {
			t.Fatalf("%d files: %d findings in the first file, want its one topic-filter finding", n, first)
		}
		return after.Mallocs - before.Mallocs
	}
	small, large := allocs(500), allocs(2000)
	if ratio := float64(large) / float64(small); ratio > 5 {
		t.Errorf("checks across 2,000 files allocated %d times, %.1fx the %d of 500 files: want about 4x (linear), not 16x (every engine with every router)", large, ratio, small)
	}
}
