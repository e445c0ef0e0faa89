package rank

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/kvcheck/kvcheck/internal/lint"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// FilesFrom turns what lint read of the --config files into the ranking's view: the Kubernetes
// kinds, the engines, which systems are set up, and every router found as the emulation it
// runs with the user's values. A router whose mode kvcheck does not emulate (Dynamo's random,
// SGLang's power_of_two, production-stack's disaggregated prefill, a LiteLLM usage-based
// strategy) is a system present, not a configured row.
func FilesFrom(paths []string, dep lint.Deployment) *Files {
	f := &Files{Paths: paths, Kinds: map[string]string{}, Systems: map[string]string{}}
	for _, o := range dep.Objects {
		if f.Kinds[o.Kind] == "" {
			f.Kinds[o.Kind] = fmt.Sprintf("%s:%d", o.File, o.Line)
		}
	}
	for _, e := range dep.Engines {
		where := fmt.Sprintf("%s:%d", e.File, e.Line)
		if e.Name != "" {
			where += " " + e.Name
		}
		f.Engines = append(f.Engines, Engine{Where: where, Image: e.Image, Version: e.Version, KVEvents: e.KVEvents,
			PrefixCachingOff: e.PrefixCachingOff, LMCache: e.LMCache, LMCacheController: e.LMCacheController})
	}
	for _, r := range dep.Routers {
		where := fmt.Sprintf("%s:%d", r.File, r.Line)
		if f.Systems[r.Kind] == "" {
			f.Systems[r.Kind] = where
		}
		for _, rc := range configured(r, where) {
			if rc.Policy == "" {
				f.NotSimulated = append(f.NotSimulated, NotSimulated{Product: r.Kind, Where: where, Reason: rc.NotSimulated, Notes: rc.Notes})
				continue
			}
			f.Routers = append(f.Routers, rc)
		}
	}
	return f
}

// settingsReader overlays a router's values on the shipped settings and records each value
// that differs from the shipped one as a change.
type settingsReader struct {
	vals    map[string]string
	where   string
	changes []Change
	// notes say which values could not be read, and that the row keeps the shipped value for
	// them.
	notes []string
	// unread says the same of the values that could not be read, for a router that gets no
	// row (nothing is simulated with the shipped value there).
	unread []string
}

// refuse records a value that is not the kind the setting takes: the row runs with the
// shipped value, and says so.
func (s *settingsReader) refuse(key, val, want string, shipped any) {
	s.notes = append(s.notes, fmt.Sprintf("%s %q in %s is not %s: simulated with the shipped %v; fix the value to get these figures for it",
		key, val, s.where, want, shipped))
	s.unread = append(s.unread, fmt.Sprintf("%s %q in %s is not %s: kvcheck could not read it; fix the value", key, val, s.where, want))
}

func (s *settingsReader) note(key, val string) {
	s.changes = append(s.changes, Change{Setting: key, Value: val, Why: "set in " + s.where})
}

func (s *settingsReader) float(key string, dst *float64) {
	v, ok := s.vals[key]
	if !ok {
		return
	}
	x, err := parseFloat(v)
	if err != nil {
		s.refuse(key, v, "a number", *dst)
		return
	}
	if x == *dst {
		return
	}
	*dst = x
	s.note(key, v)
}

func (s *settingsReader) int(key string, dst *int) {
	v, ok := s.vals[key]
	if !ok {
		return
	}
	x, err := strconv.Atoi(strings.Trim(strings.TrimSpace(v), `"'`))
	if err != nil {
		s.refuse(key, v, "a whole number", *dst)
		return
	}
	if x == *dst {
		return
	}
	*dst = x
	s.note(key, v)
}

func (s *settingsReader) str(key string, dst *string) {
	v, ok := s.vals[key]
	if !ok || v == *dst {
		return
	}
	*dst = v
	s.note(key, v)
}

func (s *settingsReader) bool(key string, dst *bool) {
	v, ok := s.vals[key]
	if !ok {
		return
	}
	b, err := strconv.ParseBool(strings.ToLower(strings.Trim(v, `"'`)))
	if err != nil {
		s.refuse(key, v, "true or false", *dst)
		return
	}
	if b == *dst {
		return
	}
	*dst = b
	s.note(key, v)
}

// parseFloat reads a number as YAML, flags and Python write it: 1.5, "2", inf, .inf, -inf,
// float("inf"), float("-inf"). NaN is no setting's value and is refused, as is any other text.
func parseFloat(v string) (float64, error) {
	t := strings.ToLower(strings.Trim(strings.TrimSpace(v), `"'`))
	if in, ok := strings.CutPrefix(t, "float("); ok {
		if in, ok = strings.CutSuffix(in, ")"); ok {
			t = strings.Trim(strings.TrimSpace(in), `"'`)
		}
	}
	switch t {
	case "inf", ".inf", "+inf", "+.inf", "infinity", "+infinity":
		return math.Inf(1), nil
	case "-inf", "-.inf", "-infinity":
		return math.Inf(-1), nil
	}
	x, err := strconv.ParseFloat(t, 64)
	if err != nil {
		return 0, err
	}
	if math.IsNaN(x) {
		return 0, fmt.Errorf("%q is not a number", v)
	}
	return x, nil
}

// configured maps one router's values to the emulations it runs, with the user's settings.
func configured(r lint.RouterFacts, where string) []RouterConfig {
	s := sim.DefaultRouterSettings()
	rd := &settingsReader{vals: r.Values, where: where}
	var policies []string
	// skip says why the router gets no row when it runs nothing kvcheck emulates (a mode it
	// does not emulate, a value the product does not know): the ranking lists it with why.
	var skip string
	switch r.Kind {
	case lint.RouterLLMD:
		policies = []string{"llmd-approx"}
		if r.Values["producer"] == "precise" {
			policies = []string{"llmd-precise"}
		}
		if ps := strings.Split(r.Values["schedulingProfiles"], ","); len(ps) > 1 {
			rd.notes = append(rd.notes, fmt.Sprintf("%s has %d scheduling profiles (%s): simulated with the first one's scorer weights (%s); the profile handler may run another for some requests",
				where, len(ps), strings.Join(ps, ", "), ps[0]))
		}
		rd.float("queue-scorer", &s.LLMD.QueueWeight)
		rd.float("kv-cache-utilization-scorer", &s.LLMD.KVUtilWeight)
		rd.float("prefix-cache-scorer", &s.LLMD.PrefixWeight)
		if r.Values["tokenizer"] == "uds" {
			// The deprecated udsTokenizerConfig backend tokenizes with the model's own
			// tokenizer (llm-d-kv-cache's UDS tokenizer service: HuggingFace tokenizer and chat
			// template in a sidecar): engine tokens, as the vllm backend's; it was simulated as
			// the estimate, whose keys never match, while the lint (LD-01) counted it as real.
			s.LLMD.Tokenizer = "vllm"
			rd.changes = append(rd.changes, Change{Setting: "token-producer", Value: "udsTokenizerConfig",
				Why: "set in " + where + ": the model's own tokenizer in a sidecar (deprecated backend), simulated with the engine's tokens as the vllm backend"})
		} else {
			rd.str("tokenizer", &s.LLMD.Tokenizer)
		}
		rd.bool("autoTune", &s.LLMD.AutoTune)
		rd.int("blockSizeTokens", &s.LLMD.BlockSizeTokens)
		rd.int("lruCapacityPerServer", &s.LLMD.LRUCapacityPerServer)
		rd.int("maxPrefixBlocksToMatch", &s.LLMD.MaxPrefixBlocksToMatch)
		rd.int("maxPrefixTokensToMatch", &s.LLMD.MaxPrefixTokensToMatch)
		preciseBlockSize(rd, &s.LLMD.PreciseBlockSizeTokens)
	case lint.RouterProdStack:
		switch logic, set := r.Values["routingLogic"]; {
		case slices.Contains([]string{"roundrobin", "session", "prefixaware", "kvaware", "loadaware"}, logic):
			policies = []string{"prodstack-" + logic}
		case !set || logic == "":
			// Only a command line can leave it out: the chart's values default to roundrobin.
			skip = "no --routing-logic: the router requires one (it has no default) and refuses to start"
		case strings.Contains(logic, "{{"):
			skip = fmt.Sprintf("routingLogic %q is filled in when the chart renders: which logic runs is not known", logic)
		case slices.Contains(lint.ProdStackRoutingLogics(), logic):
			skip = "routingLogic " + logic + ": disaggregated prefill is not emulated (kvcheck replays aggregated engines)"
		default:
			skip = fmt.Sprintf("routingLogic %q is not one production-stack's router knows (%s): at a6c01db the router refuses it at start, and how a newer release would route with it is not known",
				logic, strings.Join(lint.ProdStackRoutingLogics(), ", "))
		}
		rd.str("sessionKey", &s.ProdStack.SessionKey)
		rd.int("prefixMinMatchLength", &s.ProdStack.PrefixMinMatch)
		rd.int("--kv-aware-threshold", &s.ProdStack.KVAwareThreshold)
		rd.float("--loadaware-beta", &s.ProdStack.LoadBeta)
	case lint.RouterDynamo:
		mode := r.Values["--router-mode"]
		switch mode {
		case "", "round-robin":
			policies = []string{"dynamo-round-robin"}
		case "kv":
			policies = []string{"dynamo-kv"}
		default:
			if strings.Contains(mode, "{{") {
				skip = fmt.Sprintf("--router-mode %q is filled in when the chart renders: which mode runs is not known", mode)
			} else if slices.Contains(lint.DynamoRouterModes(), mode) {
				skip = "--router-mode " + mode + " is not emulated (kvcheck emulates round-robin and kv)"
			} else {
				skip = fmt.Sprintf("--router-mode %q is not one Dynamo's frontend knows (%s): the frontend refuses it at start, and how a newer release would route with it is not known",
					mode, strings.Join(lint.DynamoRouterModes(), ", "))
			}
		}
		rd.str("--router-mode", &s.Dynamo.Mode)
		dynamoCost(rd, &s.Dynamo)
		rd.float("--router-kv-overlap-score-credit-decay", &s.Dynamo.CreditDecay)
		rd.bool("--router-kv-events", &s.Dynamo.KVEvents)
		if v, set := r.Values["--load-aware"]; set {
			on, err := strconv.ParseBool(strings.ToLower(strings.Trim(strings.TrimSpace(v), `"'`)))
			switch {
			case err != nil:
				rd.refuse("--load-aware", v, "true or false", false)
			case on:
				// Deprecated (removed in v1.7): the KV router with overlap credit 0 and KV
				// events off (ROUTERS.md §4), whatever the flags beside it say.
				rd.note("--load-aware", v)
				s.Dynamo.OverlapCredit, s.Dynamo.KVEvents = 0, false
			}
		}
		rd.float("--router-ttl-secs", &s.Dynamo.TTLSecs)
		rd.float("--router-temperature", &s.Dynamo.Temperature)
	case lint.RouterSGLang:
		if p := r.Values["--policy"]; p == "" || p == "cache_aware" {
			policies = []string{"sglang-cache-aware"}
		} else {
			skip = fmt.Sprintf("--policy %s is not emulated (kvcheck emulates cache_aware)", p)
		}
		if _, set := r.Values["--eviction-interval-secs"]; r.Values["launcher"] == "python" && !set {
			// The Python launcher's own default (router_args.py), not the Rust CLI's 120 s.
			s.SGLang.EvictionIntervalSecs = 60
			rd.changes = append(rd.changes, Change{"--eviction-interval-secs", "60", "the Python launcher's default (" + where + ")"})
		}
		rd.float("--cache-threshold", &s.SGLang.CacheThreshold)
		rd.float("--balance-abs-threshold", &s.SGLang.BalanceAbsThreshold)
		rd.float("--balance-rel-threshold", &s.SGLang.BalanceRelThreshold)
		rd.float("--eviction-interval-secs", &s.SGLang.EvictionIntervalSecs)
		rd.float("--eviction-interval", &s.SGLang.EvictionIntervalSecs)
		rd.int("--max-tree-size", &s.SGLang.MaxTreeSize)
	case lint.RouterRay:
		policies = []string{"ray-prefix-affinity"}
		rd.float("imbalanced_threshold", &s.Ray.ImbalancedThreshold)
		rd.float("match_rate_threshold", &s.Ray.MatchRateThreshold)
		rd.bool("do_eviction", &s.Ray.DoEviction)
		rd.int("eviction_threshold_chars", &s.Ray.EvictionThresholdChars)
		rd.int("eviction_target_chars", &s.Ray.EvictionTargetChars)
		rd.float("eviction_interval_secs", &s.Ray.EvictionIntervalSecs)
	case lint.RouterLiteLLM:
		checks := strings.Split(r.Values["optional_pre_call_checks"], ",")
		for _, c := range checks {
			switch {
			case c == "session_affinity":
				policies = append(policies, "litellm-session-affinity")
			case c == "prompt_caching":
				policies = append(policies, "litellm-prompt-caching")
			case c == "deployment_affinity" || c == "responses_api_deployment_check" || c == "encrypted_content_affinity":
				// They pin by API key, previous_response_id or encrypted content, which no
				// replayed traffic carries.
				rd.notes = append(rd.notes, fmt.Sprintf("optional_pre_call_checks %s in %s pins requests kvcheck cannot tell apart (by API key, previous response or encrypted content): not emulated, the row runs without it", c, where))
			case c != "" && !slices.Contains(lint.LiteLLMPreCallChecks(), c):
				rd.notes = append(rd.notes, fmt.Sprintf("optional_pre_call_checks %q in %s is not a check LiteLLM knows: it does nothing, and the row runs without it, as LiteLLM does", c, where))
			}
		}
		if len(policies) == 0 {
			if st := r.Values["routing_strategy"]; st == "" || st == "simple-shuffle" {
				policies = []string{"litellm-simple-shuffle"}
			} else {
				skip = fmt.Sprintf("routing_strategy %s without session_affinity or prompt_caching is not emulated (kvcheck emulates simple-shuffle)", st)
			}
		}
		if r.Values["optional_pre_call_checks"] != "" {
			s.LiteLLM.PreCallChecks = checks
			rd.note("optional_pre_call_checks", r.Values["optional_pre_call_checks"])
		}
		rd.str("routing_strategy", &s.LiteLLM.RoutingStrategy)
		rd.float("deployment_affinity_ttl_seconds", &s.LiteLLM.AffinityTTLSecs)
		rd.bool("redis", &s.LiteLLM.Redis)
		rd.int("replicas", &s.LiteLLM.ProxyPods)
	}
	if len(policies) == 0 && skip != "" {
		// The values kvcheck could not read stay said on the router's line.
		return []RouterConfig{{Where: where, NotSimulated: skip, Notes: rd.unread}}
	}
	out := make([]RouterConfig, 0, len(policies))
	for _, p := range policies {
		out = append(out, RouterConfig{Policy: p, Where: where, Settings: s, Changes: rd.changes, Notes: rd.notes})
	}
	return out
}

// preciseBlockSize reads the precise producer's tokenProcessorConfig block size as
// NewChunkedTokenDatabase resolves it (kvblock/token_processor.go): blockSizeTokens when above
// 0, else the deprecated blockSize when set, else the default 16. A value the producer refuses
// (below 0) is kept, for llmd-precise to say it cannot run.
//
// A value that is not a whole number is said on the row and treated as absent: the producer
// refuses such a config, and the row runs the value it would otherwise use.
func preciseBlockSize(rd *settingsReader, dst *int) {
	for _, k := range []string{"tokenProcessorConfig.blockSizeTokens", "tokenProcessorConfig.blockSize"} {
		v, set := rd.vals[k]
		if !set {
			continue
		}
		n, err := strconv.Atoi(strings.Trim(strings.TrimSpace(v), `"'`))
		if err != nil {
			rd.refuse(k, v, "a whole number", *dst)
			continue
		}
		if n != 0 {
			rd.int(k, dst)
			return
		}
	}
}

// dynamoCost reads the KV router's cost settings as the frontend resolves them (Dynamo's router
// guide, on the deprecated overlap score weight; ROUTERS.md §4): --router-prefill-load-scale
// (DYN_ROUTER_PREFILL_LOAD_SCALE) multiplies the prefill blocks and
// --router-kv-overlap-score-credit (DYN_ROUTER_KV_OVERLAP_SCORE_CREDIT) is the share of each
// cached block taken off them. The deprecated --router-kv-overlap-score-weight (and its
// obsolete spellings and env twins), when present, wins over the prefill load scale; a legacy 0
// also sets the credit to 0, whatever --router-kv-overlap-score-credit says (the old
// no-overlap behaviour).
//
// A legacy weight that is not a number is said on the row, which runs as if it were not given
// (the weight ships unset: the prefill load scale applies), as every unreadable value is.
func dynamoCost(rd *settingsReader, d *sim.DynamoSettings) {
	legacy, ok := rd.vals["--router-kv-overlap-score-weight"]
	w, err := parseFloat(legacy)
	if !ok || err != nil {
		rd.float("--router-prefill-load-scale", &d.OverlapWeight)
		rd.float("--router-kv-overlap-score-credit", &d.OverlapCredit)
		if ok {
			rd.unread = append(rd.unread, fmt.Sprintf("--router-kv-overlap-score-weight %q in %s is not a number: kvcheck could not read it; fix the value", legacy, rd.where))
			rd.notes = append(rd.notes, fmt.Sprintf("--router-kv-overlap-score-weight %q in %s is not a number: simulated with the shipped value, unset, so the prefill load scale %v applies; fix the value to get these figures for it",
				legacy, rd.where, d.OverlapWeight))
		}
		return
	}
	rd.float("--router-kv-overlap-score-weight", &d.OverlapWeight)
	if w != 0 {
		rd.float("--router-kv-overlap-score-credit", &d.OverlapCredit)
		return
	}
	if d.OverlapCredit != 0 {
		d.OverlapCredit = 0
		rd.changes = append(rd.changes, Change{Setting: "--router-kv-overlap-score-credit", Value: "0",
			Why: "--router-kv-overlap-score-weight 0 in " + rd.where + " also sets the overlap credit to 0"})
	}
}
