// AIBrix's configuration checks: its prefix-cache routing's environment (vllm-project/aibrix
// @e3e10f9; ROUTERS.md section 8), and the environment read back as the facts Configure reads.
package aibrix

import (
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/router/config"
)

// ID is the product's id, its rules' code prefix.
const ID = "aibrix"

// AIBrix's autoscaler: its metric sources name metrics, which lint checks as it checks an HPA's
// (vllm-project/aibrix api/autoscaling/v1alpha1/podautoscaler_types.go).
const (
	// PodAutoscalerKind is the kind of AIBrix's autoscaler resource.
	PodAutoscalerKind = "PodAutoscaler"
	// FormatPodAutoscaler is lint's format of a PodAutoscaler.
	FormatPodAutoscaler config.Format = "aibrix-podautoscaler"
)

// Checker is AIBrix's configuration checks (config.Checker).
type Checker struct{}

// ConfigRules implements config.Checker.
func (Checker) ConfigRules() []config.Rule { return rules }

// ConfigFormats implements config.Checker: AIBrix's settings live in workloads' environment.
func (Checker) ConfigFormats() []config.Format { return nil }

// CheckContainer implements config.ContainerChecker: a gateway's environment.
func (Checker) CheckContainer(d *config.Doc, c *config.Container) { checkEnv(d, c.Env) }

// rules are AIBrix's config rules (vllm-project/aibrix @e3e10f9).
var rules = []config.Rule{
	{Code: "aibrix/kv-sync-incomplete", ID: "AB-01", System: display, Severity: finding.Error,
		Summary:  "prefix-cache routing with KV event sync on but the remote tokenizer off or without its endpoint: sync does not start and routing falls back to the local hash table",
		Versions: "aibrix @e3e10f9", Source: "pkg/constants/kv_event_sync.go; pkg/cache/kv_event_manager.go", Defeats: config.DefeatsKVRouter},
	{Code: "aibrix/character-tokenizer", ID: "AB-02", System: display, Severity: finding.Info,
		Summary:  "prefix-cache routing with AIBRIX_PREFIX_CACHE_TOKENIZER_TYPE unset: the character tokenizer, not engine tokens",
		Versions: "aibrix @e3e10f9", Source: "pkg/plugins/gateway/algorithms/prefix_cache.go"},
}

// checkEnv checks an AIBrix gateway's environment.
func checkEnv(d *config.Doc, env map[string]config.Token) {
	algo, ok := env["ROUTING_ALGORITHM"]
	if !ok {
		algo, ok = env["AIBRIX_ROUTING_ALGORITHM"]
	}
	if !ok || config.ShellDefault(algo.Text) != "prefix-cache" {
		return
	}
	if _, ok := env["AIBRIX_PREFIX_CACHE_TOKENIZER_TYPE"]; !ok {
		d.File().Add("aibrix/character-tokenizer", algo.At, "env",
			"prefix-cache routing with AIBRIX_PREFIX_CACHE_TOKENIZER_TYPE unset: prefixes are matched on characters, not the engine's tokens",
			"set AIBRIX_PREFIX_CACHE_TOKENIZER_TYPE (tiktoken, or remote with the engine's tokenizer)")
	}
	if s, ok := env["AIBRIX_PREFIX_CACHE_KV_EVENT_SYNC_ENABLED"]; ok && strings.EqualFold(config.ShellDefault(s.Text), "true") {
		remote := env["AIBRIX_PREFIX_CACHE_USE_REMOTE_TOKENIZER"]
		_, ep := env["AIBRIX_PREFIX_CACHE_REMOTE_TOKENIZER_ENDPOINT"]
		if !strings.EqualFold(config.ShellDefault(remote.Text), "true") || !ep {
			d.File().Add("aibrix/kv-sync-incomplete", s.At, "env",
				"KV event sync is on, but it needs AIBRIX_PREFIX_CACHE_USE_REMOTE_TOKENIZER=true and AIBRIX_PREFIX_CACHE_REMOTE_TOKENIZER_ENDPOINT: sync does not start and routing falls back to the local hash table",
				"set AIBRIX_PREFIX_CACHE_USE_REMOTE_TOKENIZER=true and AIBRIX_PREFIX_CACHE_REMOTE_TOKENIZER_ENDPOINT to the engine's address")
		}
	}
}

// ReadNode implements config.NodeReader: a container's environment (env: [{name, value}]) or
// the Helm chart's envs mapping that sets a routing strategy, or any AIBRIX_PREFIX_CACHE_
// variable, is a gateway; its variables are the facts Configure reads.
func (Router) ReadNode(v *config.Values, n *yaml.Node) {
	env := map[string]string{}
	line := 0
	for _, e := range config.Seq(config.Get(n, "env")) {
		name, _ := config.Str(e, "name")
		val, ok := config.Str(e, "value")
		if name != "" && ok {
			env[name] = val
			if line == 0 {
				line = e.Line
			}
		}
	}
	if m := config.Get(n, "envs"); m != nil && m.Kind == yaml.MappingNode {
		for i := 1; i < len(m.Content); i += 2 {
			env[m.Content[i-1].Value] = m.Content[i].Value
		}
		line = m.Line
	}
	gateway := false
	for k := range env {
		if k == "ROUTING_ALGORITHM" || k == "AIBRIX_ROUTING_ALGORITHM" || strings.HasPrefix(k, "AIBRIX_PREFIX_CACHE_") {
			gateway = true
		}
	}
	if !gateway {
		return
	}
	rf := v.NewRouter(ID, line)
	for k, val := range env {
		if k == "AIBRIX_ROUTING_ALGORITHM" {
			k = EnvStrategy
		}
		if k == EnvStrategy || strings.HasPrefix(k, "AIBRIX_PREFIX_CACHE_") {
			rf.Values[k] = config.ShellDefault(val)
		}
	}
	v.Add(rf)
}
