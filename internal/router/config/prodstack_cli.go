package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// prodStackCLI is production-stack's router as a command line starts it (vllm_router,
// vllm-router, python -m vllm_router.app): in a container's command/args, a compose service or
// a script, outside the chart's routerSpec.
type prodStackCLI struct {
	at pos // the program word
	// flags are the router's flags in order, each as given: --name=value or --name value.
	flags []cliFlag
	// replicas is how many pods run the line (a Deployment's replicas; 1 in a script).
	replicas int
}

// cliFlag is one flag of a command line with its value and where each is written.
type cliFlag struct {
	name, val token
	// hasVal: the flag carries a value (--name=value, or a next word that is not a flag).
	hasVal bool
}

// prodStackFrom recognises production-stack's router in a command line, or returns nil.
func prodStackFrom(argv []token) *prodStackCLI {
	for i, t := range argv {
		if b := t.text[strings.LastIndexByte(t.text, '/')+1:]; b != "vllm_router.app" && b != "vllm-router" && b != "vllm_router" {
			continue
		}
		return &prodStackCLI{at: t.at, flags: cliFlags(argv[i+1:]), replicas: 1}
	}
	return nil
}

// cliFlags reads the --flags of a command line's arguments: --name=value, --name value (when
// the next word is not a flag), or --name alone.
func cliFlags(args []token) []cliFlag {
	var out []cliFlag
	for j := 0; j < len(args); j++ {
		name, val, has := strings.Cut(args[j].text, "=")
		if !strings.HasPrefix(name, "--") {
			continue
		}
		f := cliFlag{name: token{text: name, at: args[j].at}}
		switch {
		case has:
			f.val, f.hasVal = token{text: val, at: args[j].at}, true
		case j+1 < len(args) && !strings.HasPrefix(args[j+1].text, "--"):
			f.val, f.hasVal = args[j+1], true
			j++
		}
		out = append(out, f)
	}
	return out
}

// last returns the value argparse keeps for a flag: the last one given.
func (p *prodStackCLI) last(name string) (cliFlag, bool) {
	for i := len(p.flags) - 1; i >= 0; i-- {
		if p.flags[i].name.text == name {
			return p.flags[i], true
		}
	}
	return cliFlag{}, false
}

// checkProdStackCLI runs the production-stack rules that read the router's own flags on a
// router a command line starts, as checkProdStack runs them on routerSpec: an unknown
// --routing-logic, session without --session-key, kvaware or loadaware on chat traffic,
// prefixaware on several pods, a --prefix-min-match-length off the 128-character chunks. The
// rules that read the chart (its schema's enum, lmcacheConfig beside the router) do not apply.
func (fl *File) checkProdStackCLI(p *prodStackCLI) {
	loc := "vllm_router command line"
	// vllm_router's parser is plain argparse: no flag of it appends, none has a --no- twin.
	var uses []flagUse
	for _, f := range p.flags {
		uses = append(uses, flagUse{dest: f.name.text, name: f.name, val: f.val, hasVal: f.hasVal})
	}
	fl.duplicateFlags(uses, "vllm_router", loc, nil)
	lf, set := p.last("--routing-logic")
	logic, at := lf.val.text, lf.val.at
	if set && !lf.hasVal {
		logic, at = "", lf.name.at
	}
	switch {
	case !set || logic == "" || fl.templateValue(logic) || strings.Contains(logic, "$"):
		// No logic (the router refuses to start; assess says so), or one the chart or the
		// shell fills in: nothing to judge.
	case logic == "session":
		if k, ok := p.last("--session-key"); !ok || strings.TrimSpace(k.val.text) == "" {
			fl.addConfig("production-stack/session-key-missing", at, loc,
				"--routing-logic session without --session-key: the router raises \"SessionRouter must be initialized with a session_key\" at start",
				"pass --session-key with the header your clients send, such as --session-key x-user-id")
		}
	case logic == "kvaware" || logic == "loadaware":
		fl.addConfig("production-stack/kvaware-chat", at, loc,
			fmt.Sprintf("%s tokenizes only the request's prompt field: /v1/chat/completions requests are matched on an empty string", logic),
			"for chat traffic use --routing-logic prefixaware or session (with --session-key)")
	case logic == "prefixaware":
		if p.replicas > 1 {
			fl.addConfig("production-stack/prefixaware-replicas", at, loc,
				fmt.Sprintf("prefixaware on %d router replicas: each keeps its own in-memory trie (never evicted), so a conversation's turns spread over tries", p.replicas),
				"run one router replica, or put session affinity in front of the routers")
		}
	case !slices.Contains(ProdStackRoutingLogics(), logic):
		fl.unknownRoutingLogic(at, loc, logic)
	}
	if m, ok := p.last("--prefix-min-match-length"); ok {
		if n, err := strconv.Atoi(m.val.text); err == nil && n > 0 && n%128 != 0 {
			fl.addConfig("production-stack/prefix-min-match-length", m.val.at, loc,
				fmt.Sprintf("--prefix-min-match-length %d is not a multiple of 128: the trie matches whole 128-character chunks", n),
				fmt.Sprintf("pass --prefix-min-match-length %d", (n+127)/128*128))
		}
	}
	if logic == "kvaware" || logic == "prefixaware" || logic == "loadaware" {
		fl.facts().routers = append(fl.facts().routers, kvRouter{file: fl.path, kind: "production-stack", at: at})
	}
}

// containerProdStack checks the production-stack routers a container's command lines start,
// run on replicas pods, and reports whether there was one.
func (fl *File) containerProdStack(c *yaml.Node, replicas int) bool {
	found := false
	for _, l := range fl.containerCommands(c) {
		if p := prodStackFrom(l.argv); p != nil {
			p.replicas = replicas
			fl.checkProdStackCLI(p)
			found = true
		}
	}
	return found
}
