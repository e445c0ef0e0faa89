package vllmrouter

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/router/config"
)

// vLLM Router's configuration checks (config.Checker, config.CommandChecker,
// config.CommandReader): its command line, the Rust binary vllm-router (main.rs@e667ebb's clap
// CliArgs) or the Python launcher python -m vllm_router.launch_router (router_args.py), in a
// container's command and args, a compose service or a script.
//
// production-stack's router is also installed as vllm-router (and run as vllm_router); the two
// share no routing flag. A line whose program is vllm-router or vllm_router is this router's
// when it gives one of its routing flags (standaloneFlags) and none of production-stack's
// (prodStackFlags); python -m vllm_router.launch_router is always this router's, and python -m
// vllm_router.app always production-stack's (internal/router/prodstack reads the same lists'
// complement: Standalone).

// FormatCommand is a file that starts vLLM Router.
const FormatCommand config.Format = "vllm-router"

// ConfigRules implements config.Checker.
func (Router) ConfigRules() []config.Rule { return rules }

// ConfigFormats implements config.Checker.
func (Router) ConfigFormats() []config.Format { return []config.Format{FormatCommand} }

// standaloneFlags are flags of vLLM Router's command line (main.rs@e667ebb:105-160) that
// production-stack's router parser does not define.
var standaloneFlags = []string{"--policy", "--worker-urls", "--cache-threshold", "--balance-abs-threshold",
	"--balance-rel-threshold", "--eviction-interval", "--eviction-interval-secs", "--max-tree-size",
	"--vllm-pd-disaggregation", "--prefill-policy", "--decode-policy", "--intra-node-data-parallel-size"}

// prodStackFlags are production-stack's router flags that say a line is its router
// (src/vllm_router/parsers/parser.py @a6c01db): vLLM Router defines none of them.
var prodStackFlags = []string{"--routing-logic", "--service-discovery", "--static-backends", "--static-models"}

// Standalone reports whether argv starts vLLM Router rather than production-stack's router, and
// the index of its program word (-1 when it starts neither): see the comment above.
func Standalone(argv []config.Token) (bool, int) {
	for i, t := range argv {
		switch b := path.Base(t.Text); b {
		case "vllm_router.launch_router":
			return true, i
		case "vllm_router.app":
			return false, i
		case "vllm-router", "vllm_router":
			mine := false
			for _, a := range argv[i+1:] {
				name, _, _ := strings.Cut(a.Text, "=")
				if slices.Contains(prodStackFlags, name) {
					return false, i
				}
				mine = mine || slices.Contains(standaloneFlags, name)
			}
			return mine, i
		}
	}
	return false, -1
}

// line is vLLM Router as one command line starts it: its flags, each the last given (clap
// refuses a flag given twice; the Python launcher's argparse keeps the last), each with its
// value and where the value is written (the flag's word when it has none).
type line struct {
	at    config.Pos
	flags map[string]config.Token
	// workers are the words after --worker-urls (num_args 0.., main.rs:106).
	workers []string
}

// lineFrom reads vLLM Router's flags from argv, or returns nil when argv does not start it.
func lineFrom(argv []config.Token) *line {
	mine, start := Standalone(argv)
	if !mine {
		return nil
	}
	l := &line{at: argv[start].At, flags: map[string]config.Token{}}
	waiting, list := "", false
	for _, t := range argv[start+1:] {
		if strings.HasPrefix(t.Text, "--") {
			name, val, has := strings.Cut(t.Text, "=")
			l.flags[name] = config.Token{Text: val, At: t.At}
			waiting, list = "", name == "--worker-urls"
			switch {
			case list && has:
				l.workers = append(l.workers, val)
			case !has && !list:
				waiting = name
			}
			continue
		}
		switch {
		case list:
			l.workers = append(l.workers, t.Text)
		case waiting != "":
			l.flags[waiting] = t
			waiting = ""
		}
	}
	return l
}

// CheckCommand implements config.CommandChecker: vLLM Router on a command line.
func (Router) CheckCommand(f *config.File, argv []config.Token, _ int) config.Format {
	l := lineFrom(argv)
	if l == nil {
		return ""
	}
	check(f, l)
	return FormatCommand
}

// ReadCommand implements config.CommandReader: the router's flags as given (Configure reads
// them), --worker-urls as its words joined with spaces.
func (Router) ReadCommand(v *config.Values, argv []config.Token) {
	l := lineFrom(argv)
	if l == nil {
		return
	}
	rf := v.NewRouter(ID, l.at.Line)
	for k, t := range l.flags {
		rf.Values[k] = t.Text
	}
	if len(l.workers) > 0 {
		rf.Values["--worker-urls"] = strings.Join(l.workers, " ")
	}
	v.Add(rf)
}

// The rules' codes.
const (
	codeUnknownPolicy = "vllm-router/unknown-policy"
	codeRefused       = "vllm-router/cache-aware-refused"
	codeNoMatch       = "vllm-router/cache-threshold-no-match"
	codeAlwaysLoad    = "vllm-router/always-imbalanced"
	codeHashChat      = "vllm-router/hash-chat-one-worker"
	codeCacheChat     = "vllm-router/cache-aware-chat"
	codePowerOfTwo    = "vllm-router/power-of-two-no-load"
)

// rules are vLLM Router's config rules (vllm-project/router@e667ebb).
var rules = []config.Rule{
	{Code: codeUnknownPolicy, System: display, Severity: finding.Error,
		Summary:  "--policy (or --prefill-policy, --decode-policy) not one the router takes (random, round_robin, cache_aware, power_of_two, consistent_hash, rendezvous_hash): clap refuses it and the router does not start",
		Versions: "router @e667ebb", Source: "src/main.rs:110,127,131 (value_parser); py_src/vllm_router/router_args.py (choices)", Defeats: config.DefeatsAny},
	{Code: codeRefused, System: display, Severity: finding.Error,
		Summary:  "cache_aware with --cache-threshold outside 0.0-1.0, --balance-rel-threshold below 1.0, --eviction-interval 0 or --max-tree-size 0: the config validator refuses it and the router does not start",
		Versions: "router @e667ebb", Source: "src/config/validation.rs:127-167", Defeats: config.DefeatsAny},
	{Code: codeNoMatch, System: display, Severity: finding.Warning,
		Summary:  "cache_aware with --cache-threshold 1: a request follows the tree only when its match rate is above the threshold, and no rate is above 1.0, so every request goes to the least loaded worker",
		Versions: "router @e667ebb", Source: "src/policies/cache_aware.rs:303-327"},
	{Code: codeAlwaysLoad, System: display, Severity: finding.Warning,
		Summary:  "cache_aware with --balance-abs-threshold 0 and --balance-rel-threshold 1: any difference in requests in flight counts as imbalanced, so the tree is consulted only while every worker has the same load",
		Versions: "router @e667ebb", Source: "src/policies/cache_aware.rs:246-270"},
	{Code: codeHashChat, System: display, Severity: finding.Warning,
		Summary:  "consistent_hash or rendezvous_hash: a chat completion is keyed on a session header (x-session-id, x-user-id, x-tenant-id, x-correlation-id, x-request-id, x-trace-id) or its session_params.session_id, never on its messages; every chat that carries neither goes to one worker",
		Versions: "router @e667ebb", Source: "src/policies/hash_key.rs:11-60; src/protocols/spec.rs:542-557; src/routers/http/router.rs:490-503,549"},
	{Code: codeCacheChat, System: display, Severity: finding.Info,
		Summary:  "cache_aware (the default policy): a chat completion's routing text is its session_params.session_id, never its messages, so chats share no prefix in the tree and those without a session id all go to the least loaded worker",
		Versions: "router @e667ebb", Source: "src/protocols/spec.rs:542-557; src/routers/http/router.rs:549; src/policies/cache_aware.rs:273-327"},
	{Code: codePowerOfTwo, System: display, Severity: finding.Warning,
		Summary:  "power_of_two in front of vLLM engines: it compares the loads the router polls from each worker's /get_load, which vLLM does not serve, so every load is 0 and it routes at random",
		Versions: "router @e667ebb; vLLM serves /load, not /get_load", Source: "src/policies/power_of_two.rs:24-84; src/routers/http/router.rs:1284-1360"},
}

// policyNames are --policy's values (main.rs:110).
func policyNames() []string {
	out := make([]string, len(Policies))
	for i, p := range Policies {
		out[i] = p.Flag
	}
	return out
}

// check runs vLLM Router's rules on one command line.
func check(fl *config.File, l *line) {
	const loc = "vllm-router command line"
	policy, at := "cache_aware", l.at
	if t, ok := l.flags["--policy"]; ok {
		policy, at = t.Text, t.At
	}
	for _, name := range []string{"--policy", "--prefill-policy", "--decode-policy"} {
		t, ok := l.flags[name]
		if !ok || fl.TemplateValue(t.Text) || strings.Contains(t.Text, "$") || slices.Contains(policyNames(), t.Text) {
			continue
		}
		msg := fmt.Sprintf("%s %q is not a policy vLLM Router takes (%s): it refuses to start (\"invalid value\")", name, t.Text, strings.Join(policyNames(), ", "))
		fix := fmt.Sprintf("pass %s with one of %s", name, strings.Join(policyNames(), ", "))
		if best := config.NearestName(t.Text, policyNames()); best != "" {
			msg += "; did you mean " + best + "?"
			fix = fmt.Sprintf("pass %s %s", name, best)
		}
		fl.Add(codeUnknownPolicy, t.At, loc, msg, fix)
	}
	switch policy {
	case "cache_aware":
		checkCacheAware(fl, l, at, loc)
	case "consistent_hash", "rendezvous_hash":
		fl.Add(codeHashChat, at, loc,
			fmt.Sprintf("--policy %s keys a chat completion on a session header or its session_params.session_id and never reads its messages: every chat that carries neither hashes the same empty text and goes to one worker", policy),
			"send x-session-id (one per conversation) from the clients or the gateway in front, or session_params.session_id in the body")
	case "power_of_two":
		fl.Add(codePowerOfTwo, at, loc,
			"--policy power_of_two compares loads polled from each worker's /get_load; vLLM serves /load, not /get_load, so every load reads 0 and the policy routes at random",
			"use --policy cache_aware (the default) for prefix reuse, or round_robin for even spreading")
	}
}

// checkCacheAware runs the cache_aware rules: the validator's refusals, a threshold that
// never lets the tree choose, balance thresholds that always route by load, and chats routed
// on their session ids.
func checkCacheAware(fl *config.File, l *line, at config.Pos, loc string) {
	num := func(name string) (float64, config.Token, bool) {
		t, ok := l.flags[name]
		if !ok || fl.TemplateValue(t.Text) {
			return 0, t, false
		}
		v, err := strconv.ParseFloat(t.Text, 64)
		return v, t, err == nil
	}
	refuse := func(t config.Token, what, fix string) {
		fl.Add(codeRefused, t.At, loc, what+": the router's config validator refuses it and the router does not start", fix)
	}
	if v, t, ok := num("--cache-threshold"); ok {
		switch {
		case v < 0 || v > 1:
			refuse(t, fmt.Sprintf("--cache-threshold %s is outside 0.0-1.0", t.Text), "pass --cache-threshold between 0.0 and 1.0 (0.3 by default)")
		case v == 1:
			fl.Add(codeNoMatch, t.At, loc,
				"--cache-threshold 1: a request follows the tree only when its match rate is above the threshold, and no rate is above 1.0: every request goes to the least loaded worker and the tree is never used",
				"pass --cache-threshold 0.3 (the default) or another value below 1")
		}
	}
	rel, relTok, relOK := num("--balance-rel-threshold")
	if relOK && rel < 1 {
		refuse(relTok, fmt.Sprintf("--balance-rel-threshold %s is below 1.0", relTok.Text), "pass --balance-rel-threshold 1.5 (the default) or more")
	}
	for _, d := range []struct{ name, def string }{{"--eviction-interval", "120"}, {"--eviction-interval-secs", "120"}, {"--max-tree-size", "67108864"}} {
		if v, t, ok := num(d.name); ok && v == 0 {
			refuse(t, d.name+" 0", fmt.Sprintf("pass %s above 0 (%s by default)", d.name, d.def))
		}
	}
	abs, absTok, absOK := num("--balance-abs-threshold")
	if !relOK {
		rel = 1.5
	}
	if absOK && abs == 0 && rel == 1 {
		fl.Add(codeAlwaysLoad, absTok.At, loc,
			"--balance-abs-threshold 0 with --balance-rel-threshold 1: the loads count as imbalanced whenever one worker has more requests in flight than another, and then the least loaded worker takes the request without the tree",
			"keep --balance-abs-threshold 64 and --balance-rel-threshold 1.5 (the defaults), or raise either")
	}
	fl.Add(codeCacheChat, at, loc,
		"cache_aware matches a chat completion on its session_params.session_id alone, never on its messages: chats without one all go to the least loaded worker, and session ids that share their first characters follow each other to one worker",
		"send session_params.session_id (one per conversation) with chat requests, or route chat traffic with a router that reads the messages")
}
