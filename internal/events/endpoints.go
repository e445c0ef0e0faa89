package events

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/kvcheck/kvcheck/internal/finding"
)

// Endpoints are the publishers a live tap reads, as a command line names them: endpoints to
// dial, each one's replay endpoint in the same order ("-" or "" for none), endpoints to listen
// on, and the data-parallel ranks behind each (rank r publishes on port+r, SPEC §1.2).
type Endpoints struct {
	Dial, Replay, Listen []string
	Ranks                int
}

// EndpointError is a set of endpoints that cannot work as given: the caller's usage error.
type EndpointError struct{ msg string }

func (e *EndpointError) Error() string { return e.msg }

// expand turns each endpoint into one per data-parallel rank (port + r).
func (e Endpoints) expand(eps []string) ([]string, error) {
	if e.Ranks <= 1 {
		return eps, nil
	}
	var out []string
	for _, ep := range eps {
		if ep == "-" || ep == "" { // no replay socket for this publisher
			for range e.Ranks {
				out = append(out, "-")
			}
			continue
		}
		scheme, addr, ok := strings.Cut(ep, "://")
		host, port, err := net.SplitHostPort(addr)
		if !ok || err != nil || scheme != "tcp" {
			return nil, &EndpointError{fmt.Sprintf("--dp-ranks needs tcp://HOST:PORT endpoints, got %q", ep)}
		}
		p, err := strconv.Atoi(port)
		if err != nil {
			return nil, &EndpointError{fmt.Sprintf("--dp-ranks needs a numeric port in %q", ep)}
		}
		for r := range e.Ranks {
			out = append(out, "tcp://"+net.JoinHostPort(host, strconv.Itoa(p+r)))
		}
	}
	return out, nil
}

// Sources expands the ranks and pairs each dialled publisher with its replay endpoint.
func (e Endpoints) Sources() ([]Source, error) {
	eps, err := e.expand(e.Dial)
	if err != nil {
		return nil, err
	}
	replays, err := e.expand(e.Replay)
	if err != nil {
		return nil, err
	}
	if len(replays) > 0 && len(replays) != len(eps) {
		return nil, &EndpointError{fmt.Sprintf("--replay gives %d endpoints for %d publishers: give one per publisher, in the same order", len(replays), len(eps))}
	}
	var sources []Source
	for i, ep := range eps {
		src := Source{Endpoint: ep}
		if len(replays) > 0 && replays[i] != "-" && replays[i] != "" {
			src.Replay = replays[i]
		}
		sources = append(sources, src)
	}
	listens, err := e.expand(e.Listen)
	if err != nil {
		return nil, err
	}
	for _, ep := range listens {
		sources = append(sources, Source{Endpoint: ep, Listen: true})
	}
	return sources, nil
}

// Collisions finds replay endpoints that are also event endpoints once the data-parallel
// ranks are counted: rank r uses port+r for both, so base ports closer than the rank count
// collide.
func (e Endpoints) Collisions() []finding.Finding {
	all, err1 := e.expand(e.Dial)
	reps, err2 := e.expand(e.Replay)
	if err1 != nil || err2 != nil {
		return nil
	}
	event := map[string]bool{}
	for _, ep := range all {
		event[ep] = true
	}
	var out []finding.Finding
	for _, rp := range reps {
		if event[rp] {
			out = append(out, finding.Finding{Severity: finding.Error, Code: "port-collision", Subject: rp,
				Message: "this replay endpoint is also the event endpoint of a data-parallel rank: with " + strconv.Itoa(e.Ranks) +
					" ranks vLLM binds event port+r and replay port+r, so base ports closer than the rank count collide; move replay_endpoint further away"})
		}
	}
	return out
}
