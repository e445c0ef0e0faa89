// Package dynamo is everything kvcheck knows about NVIDIA Dynamo's frontend router: its flags
// with the shipped defaults (ROUTERS.md §4), its emulations (dynamo-round-robin, the mode it
// ships with, roundrobin.go; dynamo-kv, --router-mode kv, kv.go, whose doc comments cite the
// upstream lines they follow), how a file's flags configure them, how kvcheck would tune them,
// what they need and the DynamoGraphDeployment to apply.
package dynamo

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kvcheck/kvcheck/internal/router/product"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// ID and display are the product's names.
const (
	ID      = "dynamo"
	display = "Dynamo"
)

// Settings are NVIDIA Dynamo frontend router settings (ROUTERS.md §4).
type Settings struct {
	// Mode is --router-mode (round-robin).
	Mode string
	// OverlapWeight is the factor of the prefill term of the cost: --router-prefill-load-scale
	// (DYN_ROUTER_PREFILL_LOAD_SCALE, 1.0), or the deprecated --router-kv-overlap-score-weight,
	// which wins when given (a legacy 0 also sets OverlapCredit to 0; Dynamo's router guide); in
	// older releases that flag was the weight itself. Either way it multiplies the prefill blocks
	// (lib/kv-router/src/scheduling/selector.rs@01690d42).
	OverlapWeight float64
	// OverlapCredit is --router-kv-overlap-score-credit (DYN_ROUTER_KV_OVERLAP_SCORE_CREDIT,
	// 1.0): the share of each cached block taken off the prefill blocks.
	OverlapCredit float64
	// CreditDecay is --router-kv-overlap-score-credit-decay (0: no decay).
	CreditDecay float64
	// KVEvents is --router-kv-events (true); false is the approximate mode.
	KVEvents bool
	// NoEngineEvents is not a frontend flag but the workers': true when they publish no KV
	// events (no --kv-events-config; the newest dynamo.vllm no longer makes one up). With
	// KVEvents the router's radix tree is built only from those events, so it stays empty:
	// "Without it, the router falls back to load-only decisions even in kv mode" (Dynamo's
	// "Set up KV-Aware Routing", ROUTERS.md §4). The approximate mode (KVEvents false) needs no
	// events and ignores it. false (the zero value) is the workers publishing.
	NoEngineEvents bool
	// TTLSecs is --router-ttl-secs, the approximate mode's block lifetime (120).
	TTLSecs float64
	// Temperature is --router-temperature (0: always the lowest cost).
	Temperature float64
}

// Shipped are the settings as Dynamo ships them.
func Shipped() Settings {
	return Settings{Mode: "round-robin", OverlapWeight: 1.0, OverlapCredit: 1.0, CreditDecay: 0, KVEvents: true, TTLSecs: 120}
}

// RouterModes are the values --router-mode takes.
func RouterModes() []string {
	return []string{"round-robin", "random", "power-of-two", "kv", "direct", "least-loaded", "device-aware-weighted"}
}

// Router is Dynamo's frontend router.
type Router struct{}

// Name implements product.Router.
func (Router) Name() product.Name { return product.Name{ID: ID, Display: display} }

// Advice implements product.Advisor: the overlap credit's decay and the engines' publisher,
// which --router-mode kv does not switch on (ROUTERS.md).
func (Router) Advice() product.Advice {
	return product.Advice{
		KVAware:  []string{display + ": --router-kv-overlap-score-credit-decay defaults to 0, so a freshly scaled replica never wins; --router-mode kv does not switch the engines' event publisher on"},
		Exact:    display,
		LoadTerm: display + "'s decode blocks",
	}
}

// Shipped implements product.Router.
func (Router) Shipped() []product.Variant { return []product.Variant{{Settings: Shipped()}} }

// Emulations implements product.Router.
func (Router) Emulations(ps product.Settings) []sim.PolicyInfo {
	return []sim.PolicyInfo{roundRobin(), kvRouter(ps.(Settings))}
}

// Configure implements product.Router. It reads the frontend's flags (--router-mode,
// --router-kv-overlap-score-weight, --router-kv-overlap-score-credit,
// --router-kv-overlap-score-credit-decay, --router-prefill-load-scale, --router-kv-events
// true/false, --router-ttl-secs, --router-temperature, the deprecated --load-aware), from its
// command line or DYN_* environment, obsolete spellings read as the current ones.
func (Router) Configure(f product.Facts) []product.Configured {
	s := Shipped()
	rd := product.NewReader(f)
	var policies []string
	var skip string
	mode := f.Values["--router-mode"]
	switch mode {
	case "", "round-robin":
		policies = []string{"dynamo-round-robin"}
	case "kv":
		policies = []string{"dynamo-kv"}
	default:
		if strings.Contains(mode, "{{") {
			skip = fmt.Sprintf("--router-mode %q is filled in when the chart renders: which mode runs is not known", mode)
		} else if slices.Contains(RouterModes(), mode) {
			skip = "--router-mode " + mode + " is not emulated (kvcheck emulates round-robin and kv)"
		} else {
			skip = fmt.Sprintf("--router-mode %q is not one Dynamo's frontend knows (%s): the frontend refuses it at start, and how a newer release would route with it is not known",
				mode, strings.Join(RouterModes(), ", "))
		}
	}
	rd.Str("--router-mode", &s.Mode)
	cost(rd, &s)
	rd.Float("--router-kv-overlap-score-credit-decay", &s.CreditDecay)
	rd.Bool("--router-kv-events", &s.KVEvents)
	if v, set := f.Values["--load-aware"]; set {
		on, err := parseBool(v)
		switch {
		case err != nil:
			rd.Refuse("--load-aware", v, "true or false", false)
		case on:
			// Deprecated (removed in v1.7): the KV router with overlap credit 0 and KV events
			// off (ROUTERS.md §4), whatever the flags beside it say.
			rd.Note("--load-aware", v)
			s.OverlapCredit, s.KVEvents = 0, false
		}
	}
	rd.Float("--router-ttl-secs", &s.TTLSecs)
	rd.Float("--router-temperature", &s.Temperature)
	return rd.Result(policies, s, skip)
}

// cost reads the KV router's cost settings as the frontend resolves them (Dynamo's router
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
func cost(rd *product.Reader, d *Settings) {
	legacy, ok := rd.Values["--router-kv-overlap-score-weight"]
	w, err := product.ParseFloat(legacy)
	if !ok || err != nil {
		rd.Float("--router-prefill-load-scale", &d.OverlapWeight)
		rd.Float("--router-kv-overlap-score-credit", &d.OverlapCredit)
		if ok {
			rd.Unread = append(rd.Unread, fmt.Sprintf("--router-kv-overlap-score-weight %q in %s is not a number: kvcheck could not read it; fix the value", legacy, rd.Where))
			rd.Notes = append(rd.Notes, fmt.Sprintf("--router-kv-overlap-score-weight %q in %s is not a number: simulated with the shipped value, unset, so the prefill load scale %v applies; fix the value to get these figures for it",
				legacy, rd.Where, d.OverlapWeight))
		}
		return
	}
	rd.Float("--router-kv-overlap-score-weight", &d.OverlapWeight)
	if w != 0 {
		rd.Float("--router-kv-overlap-score-credit", &d.OverlapCredit)
		return
	}
	if d.OverlapCredit != 0 {
		d.OverlapCredit = 0
		rd.Changes = append(rd.Changes, product.Change{Setting: "--router-kv-overlap-score-credit", Value: "0",
			Why: "--router-kv-overlap-score-weight 0 in " + rd.Where + " also sets the overlap credit to 0"})
	}
}

// TunedCreditDecay is the credit decay kvcheck sets for Dynamo's KV router when a replica is
// added: the idealised kv-decay policy's default, under which a replica's overlap credit halves
// at two queued requests, so a loaded holder of the prefix loses to the empty newcomer.
const TunedCreditDecay = 0.5

// Tune implements product.Router: with a replica added, the KV router gets a credit decay.
func (Router) Tune(policy string, ps product.Settings, tr product.Traffic) (product.Settings, []product.Change) {
	s := ps.(Settings)
	if policy != "dynamo-kv" || !tr.AddReplica || s.CreditDecay != 0 {
		return s, nil
	}
	s.CreditDecay = TunedCreditDecay
	s.Mode = "kv" // the emulation is --router-mode kv whatever Mode says; the tuned row says so
	return s, []product.Change{{Setting: "--router-kv-overlap-score-credit-decay", Value: fmt.Sprint(TunedCreditDecay),
		Why: "a replica is added (--add-replica-at) and with decay 0 its empty cache never outbids a replica holding the prefix"}}
}

// ReqFrontend is the requirement of a Dynamo frontend.
const ReqFrontend = "Dynamo frontend"

// Requirements implements product.Router.
func (Router) Requirements(policy string, ps product.Settings, _ product.Traffic, f *product.Files) []product.Requirement {
	s := ps.(Settings)
	var out []product.Requirement
	if f != nil && f.Systems[ID] == "" && f.Kinds["DynamoGraphDeployment"] != "" {
		out = append(out, product.Requirement{Name: ReqFrontend, Status: product.Missing, Detail: "the DynamoGraphDeployment at " + f.Kinds["DynamoGraphDeployment"] + " has no frontend component", Adds: "a new component (the Dynamo frontend)"})
	} else {
		out = append(out, product.System(ReqFrontend, ID, "a DynamoGraphDeployment frontend or python -m dynamo.frontend", f))
	}
	if policy == "dynamo-kv" && s.KVEvents {
		out = append(out, product.KVEvents(f))
	}
	return out
}

// WithoutEvents implements product.EventReader: the KV router with --router-kv-events reads
// the engines' events, and "falls back to load-only decisions even in kv mode" without them
// (Dynamo's KV routing guide, ROUTERS.md §4).
func (Router) WithoutEvents(policy string, ps product.Settings) (product.Settings, string, bool) {
	s := ps.(Settings)
	if policy != "dynamo-kv" || !s.KVEvents {
		return s, "", false
	}
	s.NoEngineEvents = true
	return s, "Dynamo's KV router falls back to load-only decisions (\"even in kv mode\", Dynamo's KV routing guide): no overlap is credited", true
}

// Snippet implements product.Router: a DynamoGraphDeployment with the frontend's flags.
func (Router) Snippet(policy string, ps product.Settings) product.Snippet {
	s := ps.(Settings)
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	num := product.Num
	mode := "round-robin"
	args := []string{"--router-mode", mode}
	if policy == "dynamo-kv" {
		mode = "kv"
		args = []string{"--router-mode", mode, "--router-kv-overlap-score-credit-decay", num(s.CreditDecay)}
		if !s.KVEvents {
			args = append(args, "--no-router-kv-events", "--router-ttl-secs", num(s.TTLSecs))
		}
		if d := Shipped(); s.OverlapWeight != d.OverlapWeight {
			args = append(args, "--router-prefill-load-scale", num(s.OverlapWeight))
		}
		if d := Shipped(); s.OverlapCredit != d.OverlapCredit {
			args = append(args, "--router-kv-overlap-score-credit", num(s.OverlapCredit))
		}
		if s.Temperature > 0 {
			args = append(args, "--router-temperature", num(s.Temperature))
		}
	}
	w("# NVIDIA Dynamo: the frontend's router flags (python -m dynamo.frontend %s)", strings.Join(args, " "))
	w("apiVersion: nvidia.com/v1alpha1")
	w("kind: DynamoGraphDeployment")
	w("metadata:")
	w("  name: model # edit")
	w("spec:")
	w("  services:")
	w("    Frontend:")
	w("      componentType: frontend")
	w("      replicas: 1")
	w("      extraPodSpec:")
	w("        mainContainer:")
	w("          image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1 # edit: the release you run")
	w("          command: [python3, -m, dynamo.frontend]")
	w("          args: [%s]", product.FlowList(args))
	w("    VllmWorker:")
	w("      componentType: worker")
	w("      replicas: 2 # edit")
	w("      extraPodSpec:")
	w("        mainContainer:")
	w("          image: nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1 # edit")
	w("          command: [python3, -m, dynamo.vllm]")
	if mode == "kv" && s.KVEvents {
		w(`          args: [--model, your-org/your-model, --kv-events-config, '{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:20080"}'] # edit: the model`)
	} else {
		w("          args: [--model, your-org/your-model] # edit: the model")
	}
	return product.Snippet{Product: ID, Format: "Dynamo DynamoGraphDeployment (frontend flags)", File: "dynamo.yaml",
		Where: "a DynamoGraphDeployment: spec.services.Frontend.extraPodSpec.mainContainer.args, the flags of python -m dynamo.frontend", Text: b.String()}
}

// parseBool reads true or false as flags and YAML write them.
func parseBool(v string) (bool, error) { return strconv.ParseBool(strings.ToLower(product.Unquote(v))) }

// Metrics are the frontend's own metric families, dynamo_frontend_* (the catalog's dynamo
// family; ai-dynamo/dynamo lib/runtime/src/metrics/prometheus_names.rs).
func (Router) Metrics() product.Metrics {
	return product.Metrics{Families: []string{"dynamo_frontend_"}}
}
