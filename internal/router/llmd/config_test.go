package llmd

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/catalog"
	"github.com/kvcheck/kvcheck/internal/router/config"
)

// pairwisePodChecks is the definition podChecks must agree with: every publishing engine set
// against every llm-d router that dials pods, one finding per engine and code (per router for
// the block size), the first disagreement named and the others counted; nothing without such
// routers. Quadratic, so only for tests.
func pairwisePodChecks(engines []*config.Engine, podSubs []*subscriber, where func(string, config.Pos) string) []podFinding {
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
		if !e.Publishes() {
			continue
		}
		ep := e.KV.EndpointOrDefault()
		ek := fmt.Sprintf("e%d", ei)
		for si, s := range podSubs {
			if !config.Binds(ep) {
				once(ek, podFinding{file: e.File, code: "llm-d/engine-connects", at: e.KV.At, loc: e.Name,
					msg:  fmt.Sprintf("the llm-d router (%s) dials every pod, but endpoint %s has no * or ::, so vLLM connects instead of binding and the router receives nothing", where(s.file, s.at), ep),
					hint: fmt.Sprintf("set \"endpoint\": \"tcp://*:%d\" in --kv-events-config", s.socketPort)})
			} else if p, ok := config.EndpointPort(ep); ok && s.socketPort != 0 && p != s.socketPort {
				once(ek, podFinding{file: e.File, code: "llm-d/socket-port", at: e.KV.At, loc: e.Name,
					msg:  fmt.Sprintf("the engine publishes on port %d but the llm-d router (%s) dials podDiscoveryConfig.socketPort %d", p, where(s.file, s.at), s.socketPort),
					hint: fmt.Sprintf("set \"endpoint\": \"tcp://*:%d\" in --kv-events-config, or podDiscoveryConfig.socketPort: %d", s.socketPort, p)})
			}
			topic := ""
			if e.KV.TopicSet {
				topic = e.KV.Topic
			}
			if !strings.HasPrefix(topic, s.topicFilter) {
				once(ek, podFinding{file: e.File, code: "llm-d/topic-filter", at: e.KV.At, loc: e.Name,
					msg:  fmt.Sprintf("topic %q does not start with the llm-d router's topicFilter %q (%s): the subscription drops every event", topic, s.topicFilter, where(s.file, s.at)),
					hint: fmt.Sprintf("set \"topic\": \"%s$(POD_IP):8000@<model>\" in --kv-events-config", s.topicFilter)})
			}
			if b, ok := e.Flag("--block-size"); ok && s.blockSize != 0 {
				if n, err := strconv.Atoi(b.Text); err == nil && n != s.blockSize {
					once(fmt.Sprintf("s%d", si), podFinding{file: s.file, code: "llm-d/block-size-differs", at: s.at, loc: s.blockSizeKey,
						msg:  fmt.Sprintf("%s %d differs from the engine's --block-size %d (%s): the producer README (@ebab687) says they need not match, the June 2026 guide says they must", s.blockSizeKey, s.blockSize, n, where(e.File, b.At)),
						hint: fmt.Sprintf("set %s: %d to be safe with older releases", s.blockSizeKey, n)})
				}
			}
			if s.replayPort != 0 && !e.Version.IsZero() && e.Version.Less(catalog.Version{Major: 0, Minor: 26}) {
				once(ek, podFinding{file: e.File, code: "vllm/replay-needs-0.26", at: e.KV.At, loc: e.Name,
					msg:  fmt.Sprintf("the llm-d router (%s) asks for replay on port %d, but image %s is vLLM %s: replay needs 0.26 or newer", where(s.file, s.at), s.replayPort, e.Image, e.Version),
					hint: "use a vLLM 0.26+ image, or drop replaySocketPort"})
			}
		}
	}
	return out
}

// randomPods makes engines and pod-dialling routers whose endpoints, ports, topics, block sizes
// and versions are drawn from small sets, so that every check both agrees and disagrees often.
func randomPods(r *rand.Rand, nEngines, nSubs int) ([]*config.Engine, []*subscriber) {
	pick := func(xs ...string) string { return xs[r.IntN(len(xs))] }
	var engines []*config.Engine
	for i := range nEngines {
		e := &config.Engine{File: fmt.Sprintf("e%d.yaml", i%7), At: config.Pos{Line: i + 1}, Name: fmt.Sprintf("vllm-%d", i), Flags: map[string]config.Token{}}
		if r.IntN(8) > 0 {
			e.KV = &config.KVEvents{At: config.Pos{Line: i + 1, Col: 3}, Enable: r.IntN(6) > 0,
				Endpoint: pick("tcp://*:5557", "tcp://*:5556", "tcp://[::]:5557", "tcp://10.0.0.1:5557", "ipc:///tmp/x", "tcp://*:x", ""),
				TopicSet: r.IntN(4) > 0, Topic: pick("kv@", "kv@10.0.0.1:8000@m", "", "k", "other@", "kv@$(POD_IP)")}
			e.KV.EndpointSet = e.KV.Endpoint != ""
		}
		if r.IntN(3) > 0 {
			e.Flags["--block-size"] = config.Token{Text: pick("16", "64", "32", "x", "0"), At: config.Pos{Line: i + 1, Col: 9}}
		}
		if r.IntN(2) > 0 {
			e.Image = "vllm/vllm-openai:" + pick("v0.25.1", "v0.26.0", "v0.11.0")
			e.Version, _ = config.VLLMImageVersion(e.Image)
		}
		engines = append(engines, e)
	}
	var subs []*subscriber
	for i := range nSubs {
		subs = append(subs, &subscriber{file: fmt.Sprintf("epp%d.yaml", i%5), at: config.Pos{Line: 100 + i}, discoverPods: true,
			topicFilter: pick("kv@", "", "kv@10.", "kv@10.0.0.1:8000@m", "kv", "x", "kv@10.0.0.1:8000@mm"),
			socketPort:  []int{0, 5557, 5556, 6000}[r.IntN(4)],
			replayPort:  []int{0, 0, 5558}[r.IntN(3)],
			blockSize:   []int{0, 16, 64}[r.IntN(3)], blockSizeKey: pick("blockSize", "blockSizeTokens")})
	}
	return engines, subs
}

func TestPodChecksAgreeWithPairwise(t *testing.T) {
	where := func(file string, at config.Pos) string { return fmt.Sprintf("%s:%d", file, at.Line) }
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 23))
		engines, subs := randomPods(r, r.IntN(30), r.IntN(12))
		got := podChecks(engines, subs, where)
		want := pairwisePodChecks(engines, subs, where)
		for i := range got {
			got[i].order = [3]int{}
		}
		if diff := cmp.Diff(want, got, cmp.AllowUnexported(podFinding{})); diff != "" {
			t.Fatalf("seed %d: %d engines, %d routers: podChecks differs from the pairwise definition (-want +got):\n%s", seed, len(engines), len(subs), diff)
		}
	}
}
