// Package aibrix is what kvcheck knows about the AIBrix gateway's configuration: its
// prefix-cache routing's environment (vllm-project/aibrix @e3e10f9; ROUTERS.md section 8). It
// checks configuration only: AIBrix's routing is not emulated yet, so it is not among the
// registry's products (internal/router.Checkers lists it).
package aibrix

import (
	"strings"

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
	{Code: "aibrix/kv-sync-incomplete", ID: "AB-01", System: "AIBrix", Severity: finding.Error,
		Summary:  "prefix-cache routing with KV event sync on but the remote tokenizer off or without its endpoint: sync does not start and routing falls back to the local hash table",
		Versions: "aibrix @e3e10f9", Source: "pkg/constants/kv_event_sync.go; pkg/cache/kv_event_manager.go", Defeats: config.DefeatsKVRouter},
	{Code: "aibrix/character-tokenizer", ID: "AB-02", System: "AIBrix", Severity: finding.Info,
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
