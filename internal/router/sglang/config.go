package sglang

import (
	"fmt"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/router/config"
)

// The SGLang model gateway's configuration checks (config.Checker): the gateway's command
// line, with either launcher (python -m sglang_router.launch_router, or the Rust
// sgl-model-gateway), in a container, a compose service or a script, and its workers against
// the routers of the run (router_args.py @05e589a and the Rust CLI main.rs; ROUTERS.md section
// 5).

// FormatGateway is a file that starts the SGLang model gateway.
const FormatGateway config.Format = "sglang-gateway"

// ConfigRules implements config.Checker.
func (Router) ConfigRules() []config.Rule { return rules }

// ConfigFormats implements config.Checker.
func (Router) ConfigFormats() []config.Format { return []config.Format{FormatGateway} }

// CheckCommand implements config.CommandChecker: the gateway on a command line.
func (Router) CheckCommand(f *config.File, argv []config.Token, _ int) config.Format {
	g := sglangFrom(f.Path(), argv)
	if g == nil {
		return ""
	}
	checkSGLang(f, g)
	return FormatGateway
}

// CheckRun implements config.RunChecker: stacked retries (SG-03) and mixed launchers (SG-02).
func (Router) CheckRun(r *config.Run) {
	gws := config.FactsOf[*sglangGateway](r)
	sglangRetriesStacked(r, gws)
	sglangLaunchersMixed(r, gws)
}

// ReadCommand implements config.CommandReader: the gateway's flags as given, and its
// launcher.
func (Router) ReadCommand(v *config.Values, argv []config.Token) {
	g := sglangFrom(v.File().Path(), argv)
	if g == nil {
		return
	}
	rf := v.NewRouter(ID, g.at.Line)
	rf.Values["launcher"] = "python"
	if g.rust {
		rf.Values["launcher"] = "rust"
	}
	for k, t := range g.flags {
		rf.Values[k] = t.Text
	}
	v.Add(rf)
}

// rules are the SGLang gateway's config rules.
var rules = []config.Rule{
	{Code: "sglang/eviction-flag", ID: "SG-02", System: display, Severity: finding.Info,
		Summary:  "the other launcher's eviction flag (--eviction-interval given to the Python launcher, whose flag is --eviction-interval-secs, default 60 s; --eviction-interval-secs to the Rust sgl-model-gateway, whose flag is --eviction-interval, default 120 s), or Python and Rust cache_aware gateways in one run that evict at different intervals because one keeps its launcher's default",
		Versions: "router_args.py @05e589a; Rust CLI main.rs (2026)", Source: "router_args.py; main.rs"},
	{Code: "sglang/retries-stacked", ID: "SG-03", System: display, Severity: finding.Info,
		Summary:  "a gateway whose worker URLs name another router of the run, with retries not limited (retry_max_retries defaults to 5 in the Python launcher): its retries stack on that router's own failover",
		Versions: "router_args.py @05e589a", Source: "router_args.py"},
}

// sglangGateway is one SGLang model gateway as a command line starts it: the Python launcher
// (python -m sglang_router.launch_router) or the Rust binary (sgl-model-gateway), ROUTERS.md
// section 5.
type sglangGateway struct {
	file  string
	at    config.Pos
	rust  bool
	flags map[string]config.Token
	// workers are the hosts of --worker-urls, --prefill and --decode, with where each is given.
	workers []config.Token
}

// The two launchers' eviction interval flags and defaults (Python RouterArgs
// router_args.py@05e589a; Rust CLI main.rs): the same setting under two names.
const (
	sglangPyEviction    = "--eviction-interval-secs"
	sglangRustEviction  = "--eviction-interval"
	sglangPyEvictionS   = 60
	sglangRustEvictionS = 120
	// sglangPyRetries is the Python launcher's retry_max_retries default.
	sglangPyRetries = 5
)

// sglangFrom recognises an SGLang gateway in a command line, or returns nil.
func sglangFrom(file string, argv []config.Token) *sglangGateway {
	start := -1
	g := &sglangGateway{file: file, flags: map[string]config.Token{}}
	for i, t := range argv {
		switch {
		case t.Text == "sglang_router.launch_router":
		case path.Base(t.Text) == "sgl-model-gateway":
			g.rust = true
		default:
			continue
		}
		start, g.at = i+1, t.At
		break
	}
	if start < 0 {
		return nil
	}
	var list string // the flag whose values the words after it are (--worker-urls a b)
	for i := start; i < len(argv); i++ {
		t := argv[i]
		if strings.HasPrefix(t.Text, "-") && t.Text != "-" {
			name, val, hasVal := strings.Cut(t.Text, "=")
			list = ""
			if !hasVal && i+1 < len(argv) && !strings.HasPrefix(argv[i+1].Text, "-") {
				val = argv[i+1].Text
			}
			g.flags[name] = config.Token{Text: val, At: t.At}
			switch name {
			case "--worker-urls", "--prefill", "--decode":
				list = name
				if hasVal {
					g.workers = append(g.workers, config.Token{Text: val, At: t.At})
				}
			}
			continue
		}
		if list != "" {
			g.workers = append(g.workers, t)
		}
	}
	return g
}

// workerHost returns the host of a worker URL (http://host:port), or "" for a word that is not
// one (the bootstrap port after a --prefill URL).
func workerHost(s string) string {
	if !strings.Contains(s, "://") {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// checkSGLang runs the single-file gateway rules and records the gateway for the cross-file
// ones.
func checkSGLang(fl *config.File, g *sglangGateway) {
	fl.AddFact(g)
	if t, ok := g.flags[sglangRustEviction]; ok && !g.rust {
		fl.Add("sglang/eviction-flag", t.At, "sglang_router.launch_router",
			fmt.Sprintf("%s is the Rust gateway's flag (default %d s); the Python launcher's is %s (default %d s)", sglangRustEviction, sglangRustEvictionS, sglangPyEviction, sglangPyEvictionS),
			fmt.Sprintf("write %s %s", sglangPyEviction, orDefault(t.Text, strconv.Itoa(sglangPyEvictionS))))
	}
	if t, ok := g.flags[sglangPyEviction]; ok && g.rust {
		fl.Add("sglang/eviction-flag", t.At, "sgl-model-gateway",
			fmt.Sprintf("%s is the Python launcher's flag (default %d s); the Rust gateway's is %s (default %d s)", sglangPyEviction, sglangPyEvictionS, sglangRustEviction, sglangRustEvictionS),
			fmt.Sprintf("write %s %s", sglangRustEviction, orDefault(t.Text, strconv.Itoa(sglangRustEvictionS))))
	}
}

// cacheAware reports a gateway on the cache_aware policy (both launchers' default).
func (g *sglangGateway) cacheAware() bool {
	p, ok := g.flags["--policy"]
	return !ok || p.Text == "cache_aware"
}

// eviction returns the gateway's eviction interval in seconds under its own launcher's flag,
// whether that is the launcher's default, and false when it cannot be told (the other
// launcher's flag, which SG-02 reports on its own, or a value that is not a number).
func (g *sglangGateway) eviction() (secs int, isDefault, ok bool) {
	own, other, def := sglangPyEviction, sglangRustEviction, sglangPyEvictionS
	if g.rust {
		own, other, def = sglangRustEviction, sglangPyEviction, sglangRustEvictionS
	}
	if _, bad := g.flags[other]; bad {
		return 0, false, false
	}
	t, set := g.flags[own]
	if !set {
		return def, true, true
	}
	n, err := strconv.Atoi(t.Text)
	return n, false, err == nil
}

// sglangLaunchersMixed reports SG-02's other half: Python and Rust cache_aware gateways in one
// run whose eviction intervals differ because one of them is left at its launcher's default
// (60 s and 120 s; the other cache_aware CLI defaults are the same in both).
func sglangLaunchersMixed(r *config.Run, sglang []*sglangGateway) {
	var first [2]*sglangGateway // the first Python and the first Rust gateway
	for _, g := range sglang {
		i := 0
		if g.rust {
			i = 1
		}
		if first[i] == nil && g.cacheAware() {
			first[i] = g
		}
	}
	if first[0] == nil || first[1] == nil {
		return
	}
	for _, g := range sglang {
		if !g.cacheAware() {
			continue
		}
		other := first[0]
		if !g.rust {
			other = first[1]
		}
		mine, isDef, ok1 := g.eviction()
		theirs, _, ok2 := other.eviction()
		if !ok1 || !ok2 || !isDef || mine == theirs {
			continue
		}
		name, flag := "Python launcher", sglangPyEviction
		if g.rust {
			name, flag = "Rust sgl-model-gateway", sglangRustEviction
		}
		r.Add(g.file, "sglang/eviction-flag", g.at, "sglang gateway",
			fmt.Sprintf("this %s leaves the eviction interval at its default %d s while the other launcher's gateway (%s:%d) evicts every %d s: the Python and Rust launchers default differently (%s 60 s, %s 120 s)",
				name, mine, other.file, other.at.Line, theirs, sglangPyEviction, sglangRustEviction),
			fmt.Sprintf("pass %s %d to make them equal", flag, theirs))
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// sglangRetriesStacked reports SG-03: an SGLang gateway whose worker URLs name another router
// of the run, with its retries not limited to one.
func sglangRetriesStacked(r *config.Run, sglang []*sglangGateway) {
	for _, g := range sglang {
		if _, off := g.flags["--disable-retries"]; off {
			continue
		}
		n := fmt.Sprintf("unset (default %d in the Python launcher)", sglangPyRetries)
		if t, ok := g.flags["--retry-max-retries"]; ok {
			v, err := strconv.Atoi(t.Text)
			if err == nil && v <= 1 {
				continue
			}
			n = t.Text
		}
		for _, w := range g.workers {
			x, ok := r.Index().Find(workerHost(w.Text))
			if !ok {
				continue
			}
			r.Add(g.file, "sglang/retries-stacked", w.At, "sglang gateway",
				fmt.Sprintf("worker %s is the %s router (%s:%d) and retry_max_retries is %s: each failure is retried by the gateway on top of the router's own failover", w.Text, x.Kind, x.File, x.At.Line, n),
				"pass --retry-max-retries 1 (or --disable-retries) to the gateway")
			break
		}
	}
}
