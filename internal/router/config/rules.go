package config

import (
	"fmt"
	"strings"

	"github.com/kvcheck/kvcheck/internal/finding"
)

// Rule is one router or engine configuration check: the stable code findings carry, the id of
// the rule in the router facts table (ROUTERS.md), and what it catches in which versions.
type Rule struct {
	Code     string // stable, for suppressions: system/what
	ID       string // the table's id (LL-02); empty for checks the table does not list
	System   string
	Severity finding.Severity
	Summary  string // what it catches, one sentence
	Versions string // the releases it holds for, as read in the cited source
	Source   string // where the behaviour was read
	// Defeats says what an error of the rule makes useless, for kvcheck assess: DefeatsAny
	// (prefix caching off, an engine that does not start), DefeatsKVRouter (the router's view
	// of the caches), DefeatsSession (session affinity); empty when it defeats neither.
	Defeats string
}

// What a config error defeats (Rule.Defeats).
const (
	DefeatsAny      = "any"
	DefeatsKVRouter = "kv-router"
	DefeatsSession  = "session"
)

// rules are the rules of the checks no product owns: the vLLM engine's, the YAML, Kubernetes
// and command-line ones every config file gets, and the Gateway API Inference Extension's.
var rules = []Rule{
	// vLLM engine (vllm @5ac2684, 2026-08-07).
	{Code: "vllm/kv-events-disabled", ID: "VL-01", System: "vLLM", Severity: finding.Error,
		Summary:  "--kv-events-config without \"enable_kv_cache_events\": true: nothing is published",
		Versions: "all releases with --kv-events-config (default false)", Source: "vllm/config/kv_events.py", Defeats: DefeatsKVRouter},
	{Code: "vllm/publisher-null", ID: "VL-02", System: "vLLM", Severity: finding.Error,
		Summary:  "vLLM 0.11.0 or older with publisher omitted: the publisher defaults to null and nothing is sent",
		Versions: "<= 0.11.0 (0.11.1 made zmq the default when enabled)", Source: "docs.vllm.ai v0.10.2; SPEC 1.1", Defeats: DefeatsKVRouter},
	{Code: "vllm/prefix-caching-off", ID: "VL-03", System: "vLLM", Severity: finding.Error,
		Summary:  "--no-enable-prefix-caching behind a KV-aware router: no hits and (almost) no events",
		Versions: "all releases", Source: "vllm/config/cache.py", Defeats: DefeatsAny},
	{Code: "vllm/prefix-caching-disabled", ID: "VL-03", System: "vLLM", Severity: finding.Warning,
		Summary:  "--no-enable-prefix-caching with no KV-aware router in the run: the engine reuses no prefix, not even a system prompt its own earlier requests computed",
		Versions: "all releases", Source: "vllm/config/cache.py"},
	{Code: "vllm/replay-port-collision", ID: "VL-04", System: "vLLM", Severity: finding.Error,
		Summary:  "replay_endpoint's port is fewer than data-parallel-size ports from the endpoint's: rank r binds endpoint+r and replay+r, so two sockets want one port",
		Versions: "vllm @5ac2684", Source: "vllm/distributed/kv_events.py", Defeats: DefeatsAny},
	{Code: "vllm/hash-seed", ID: "VL-05", System: "vLLM", Severity: finding.Warning,
		Summary:  "replicas of one model publish KV events with PYTHONHASHSEED unset or different: NONE_HASH is random per process, so their block hashes differ",
		Versions: "vllm @5ac2684 (a fixed default from 0.29 is unverified)", Source: "vllm/v1/core/kv_cache_utils.py"},
	{Code: "vllm/hash-algo", ID: "VL-05", System: "vLLM", Severity: finding.Warning,
		Summary:  "replicas of one model with different --prefix-caching-hash-algo: the same prefix has different block hashes on each",
		Versions: "vllm @5ac2684", Source: "vllm/config/cache.py"},
	{Code: "vllm/no-such-flag", ID: "VL-06", System: "vLLM", Severity: finding.Error,
		Summary:  "--enable-kv-cache-events or --kv-events-publisher: vLLM has no such flags and refuses to start",
		Versions: "all releases (only --kv-events-config)", Source: "vllm/engine/arg_utils.py; aibrix kv-event-sync.rst", Defeats: DefeatsAny},
	{Code: "vllm/endpoint-connects", ID: "VL-07", System: "vLLM", Severity: finding.Warning,
		Summary:  "a KV-event endpoint without * or ::: vLLM connects to it, so the consumer must bind that address",
		Versions: "vllm @5ac2684", Source: "vllm/distributed/kv_events.py"},
	{Code: "vllm/replay-needs-0.26", System: "vLLM", Severity: finding.Warning,
		Summary:  "a router that asks for replay in front of a vLLM image older than 0.26: replay is not served",
		Versions: "vLLM < 0.26", Source: "SPEC (replay needs vLLM >= 0.26)"},
	{Code: "vllm/newer-than-catalog", System: "vLLM", Severity: finding.Info,
		Summary:  "a vllm/vllm-openai image tag naming a release newer than this kvcheck's metric catalog: metric names are checked against the release the run targets (the catalog's newest by default), and renames after it are not known",
		Versions: "vLLM newer than the catalog's newest release", Source: "internal/catalog/metrics.yaml"},

	// Every configuration file read as YAML.
	{Code: "yaml/duplicate-key", System: "YAML", Severity: finding.Warning,
		Summary:  "a key written more than once in one mapping of a router or engine configuration: Helm and PyYAML (LiteLLM, Ray Serve) keep the last pair silently, kubectl apply (strict by default since 1.27), docker compose and the llm-d EPP refuse the file",
		Versions: "YAML 1.2 (keys are unique); Helm 3, kubectl >= 1.27, compose v2, llm-d @ebab687", Source: "helm/helm#4107; kubectl apply --validate; compose-go (yaml.v3); apimachinery strict decoding (YAMLToJSONStrict)"},

	{Code: "kubernetes/duplicate-env", System: "Kubernetes", Severity: finding.Warning,
		Summary:  "an environment variable set twice in one env list (a container's env, a Dynamo component's envs; PYTHONHASHSEED, DYN_ROUTER_MODE, LMCACHE_*): the container gets the last, the API server warns it hides the earlier one, and kubectl apply's merge by name may drop one",
		Versions: "Kubernetes pod warnings (hides previous definition); the kubelet keeps the last", Source: "pkg/api/pod/warnings.go; kubelet makeEnvironmentVariables"},

	{Code: "cli/duplicate-flag", System: "command line", Severity: finding.Warning,
		Summary:  "a flag given more than once on a vLLM server's or production-stack vllm_router's command line, or both spellings of one vLLM switch (--enable-prefix-caching and --no-enable-prefix-caching): argparse keeps the last silently (--middleware and vLLM's other append flags are left out)",
		Versions: "vLLM's FlexibleArgumentParser (logs \"Found duplicate keys\"); vllm_router @a6c01db", Source: "Python argparse (store, BooleanOptionalAction); vllm/utils/argparse_utils.py; src/vllm_router/parsers/parser.py"},
	{Code: "json/duplicate-key", System: "command line", Severity: finding.Warning,
		Summary:  "a key written more than once in one object of a flag's JSON value (--kv-events-config, --kv-transfer-config): Python's json and vLLM's pydantic reader keep the last silently",
		Versions: "Python json, pydantic v2", Source: "json.loads (dict keeps the last); vllm/engine/arg_utils.py parse_dataclass (TypeAdapter.validate_json)"},

	// Gateway API Inference Extension.
	{Code: "gaie/fail-open", ID: "GI-01", System: "GAIE", Severity: finding.Info,
		Summary:  "endpointPickerRef.failureMode FailOpen: while the EPP is down the gateway picks any endpoint and prefix routing is bypassed silently",
		Versions: "inference.networking.k8s.io/v1 @84436a9", Source: "api/v1/inferencepool_types.go"},
	{Code: "gaie/deprecated-objective-api", ID: "GI-02", System: "GAIE", Severity: finding.Warning,
		Summary:  "an InferenceObjective in inference.networking.x-k8s.io: deprecated, llm-d.ai/v1alpha2 is the served version",
		Versions: "llm-d-router @ebab687", Source: "pkg/epp/controller/inferenceobjective_reconciler.go"},
}

// Rules returns every config rule: each checker's in the registry's order, then the generic
// ones.
func Rules(checkers []Checker) []Rule {
	var out []Rule
	for _, c := range checkers {
		out = append(out, c.ConfigRules()...)
	}
	return append(out, rules...)
}

// ruleIndex returns every rule by code. It panics on a code given twice, and on a product's
// code outside its system (the first rule's code prefix): programming errors in a table.
func ruleIndex(checkers []Checker) map[string]*Rule {
	all := Rules(checkers)
	m := make(map[string]*Rule, len(all))
	for i := range all {
		if _, dup := m[all[i].Code]; dup {
			panic("config: duplicate rule code " + all[i].Code)
		}
		m[all[i].Code] = &all[i]
	}
	for _, c := range checkers {
		rs := c.ConfigRules()
		for _, r := range rs {
			if system, _, _ := strings.Cut(rs[0].Code, "/"); !strings.HasPrefix(r.Code, system+"/") {
				panic("config: rule " + r.Code + " is not under its product's " + system + "/")
			}
		}
	}
	return m
}

// LookupRule returns the config rule with a code.
func (l *Linter) LookupRule(code string) (Rule, bool) {
	r, ok := l.rules[code]
	if !ok {
		return Rule{}, false
	}
	return *r, true
}

// Rules returns every config rule (Rules of the Linter's checkers).
func (l *Linter) Rules() []Rule { return Rules(l.o.Checkers) }

// RulesMarkdown renders the rule table as the README lists it.
func RulesMarkdown(rules []Rule) string {
	var b strings.Builder
	b.WriteString("| code | id | system | severity | what it catches | holds for |\n|---|---|---|---|---|---|\n")
	for _, r := range rules {
		id := r.ID
		if id == "" {
			id = "-"
		}
		fmt.Fprintf(&b, "| <a id=\"%s\"></a>`%s` | %s | %s | %s | %s | %s |\n", RuleAnchor(r.Code), r.Code, id, r.System, r.Severity,
			strings.ReplaceAll(r.Summary, "|", "\\|"), strings.ReplaceAll(r.Versions, "|", "\\|"))
	}
	return b.String()
}

// RuleAnchor is the README's anchor of a finding code's row (rule-litellm-no-affinity), which
// SARIF rules link to as their help.
func RuleAnchor(code string) string {
	var b strings.Builder
	b.WriteString("rule-")
	for _, r := range strings.ToLower(code) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	return b.String()
}
