package config

import (
	"fmt"
	"net/url"
	"path"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// FormatSGLang is a file that starts the SGLang model gateway.
const FormatSGLang Format = "sglang-gateway"

// sglangGateway is one SGLang model gateway as a command line starts it: the Python launcher
// (python -m sglang_router.launch_router) or the Rust binary (sgl-model-gateway), ROUTERS.md
// section 5.
type sglangGateway struct {
	file  string
	at    pos
	rust  bool
	flags map[string]token
	// workers are the hosts of --worker-urls, --prefill and --decode, with where each is given.
	workers []token
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
func sglangFrom(file string, argv []token) *sglangGateway {
	start := -1
	g := &sglangGateway{file: file, flags: map[string]token{}}
	for i, t := range argv {
		switch {
		case t.text == "sglang_router.launch_router":
		case path.Base(t.text) == "sgl-model-gateway":
			g.rust = true
		default:
			continue
		}
		start, g.at = i+1, t.at
		break
	}
	if start < 0 {
		return nil
	}
	var list string // the flag whose values the words after it are (--worker-urls a b)
	for i := start; i < len(argv); i++ {
		t := argv[i]
		if strings.HasPrefix(t.text, "-") && t.text != "-" {
			name, val, hasVal := strings.Cut(t.text, "=")
			list = ""
			if !hasVal && i+1 < len(argv) && !strings.HasPrefix(argv[i+1].text, "-") {
				val = argv[i+1].text
			}
			g.flags[name] = token{text: val, at: t.at}
			switch name {
			case "--worker-urls", "--prefill", "--decode":
				list = name
				if hasVal {
					g.workers = append(g.workers, token{text: val, at: t.at})
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
func (fl *File) checkSGLang(g *sglangGateway) {
	fl.facts().sglang = append(fl.facts().sglang, g)
	if t, ok := g.flags[sglangRustEviction]; ok && !g.rust {
		fl.addConfig("sglang/eviction-flag", t.at, "sglang_router.launch_router",
			fmt.Sprintf("%s is the Rust gateway's flag (default %d s); the Python launcher's is %s (default %d s)", sglangRustEviction, sglangRustEvictionS, sglangPyEviction, sglangPyEvictionS),
			fmt.Sprintf("write %s %s", sglangPyEviction, orDefault(t.text, strconv.Itoa(sglangPyEvictionS))))
	}
	if t, ok := g.flags[sglangPyEviction]; ok && g.rust {
		fl.addConfig("sglang/eviction-flag", t.at, "sgl-model-gateway",
			fmt.Sprintf("%s is the Python launcher's flag (default %d s); the Rust gateway's is %s (default %d s)", sglangPyEviction, sglangPyEvictionS, sglangRustEviction, sglangRustEvictionS),
			fmt.Sprintf("write %s %s", sglangRustEviction, orDefault(t.text, strconv.Itoa(sglangRustEvictionS))))
	}
}

// cacheAware reports a gateway on the cache_aware policy (both launchers' default).
func (g *sglangGateway) cacheAware() bool {
	p, ok := g.flags["--policy"]
	return !ok || p.text == "cache_aware"
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
	n, err := strconv.Atoi(t.text)
	return n, false, err == nil
}

// sglangLaunchersMixed reports SG-02's other half: Python and Rust cache_aware gateways in one
// run whose eviction intervals differ because one of them is left at its launcher's default
// (60 s and 120 s; the other cache_aware CLI defaults are the same in both).
func sglangLaunchersMixed(sglang []*sglangGateway, add func(file, code string, at pos, loc, msg, hint string)) {
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
		add(g.file, "sglang/eviction-flag", g.at, "sglang gateway",
			fmt.Sprintf("this %s leaves the eviction interval at its default %d s while the other launcher's gateway (%s:%d) evicts every %d s: the Python and Rust launchers default differently (%s 60 s, %s 120 s)",
				name, mine, other.file, other.at.line, theirs, sglangPyEviction, sglangRustEviction),
			fmt.Sprintf("pass %s %d to make them equal", flag, theirs))
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// containerGateways checks the SGLang gateways a container's command lines start and reports
// whether there was one.
func (fl *File) containerGateways(c *yaml.Node) bool {
	found := false
	for _, l := range fl.containerCommands(c) {
		if g := sglangFrom(fl.path, l.argv); g != nil {
			fl.checkSGLang(g)
			found = true
		}
	}
	return found
}
