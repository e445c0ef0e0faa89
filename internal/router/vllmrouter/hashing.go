package vllmrouter

import (
	"fmt"
	"strings"

	"github.com/kvcheck/kvcheck/internal/sim"
)

// routingText is the text vLLM Router hands its policies (route_typed_request calls
// extract_text_for_routing, router.rs:549; spec.rs@e667ebb:542-557, 764-766, 2323-2338):
//   - a chat completion: its session_params.session_id when that is a string that is not
//     blank, else "" (the messages are never read);
//   - a completion: its prompt; a list of strings joined with spaces (kvcheck keeps a batch's
//     first prompt only); token ids "token_ids:<count>" (a batch of them
//     "token_ids_batch:<prompts>:<ids>", where kvcheck counts the first prompt's ids as the
//     total).
func routingText(v *sim.View) string {
	switch {
	case v == nil:
		return ""
	case v.Chat:
		if strings.TrimSpace(v.SessionParams) == "" {
			return ""
		}
		return v.SessionParams
	case v.PromptIDs > 0 && v.BatchLeft > 0:
		return fmt.Sprintf("token_ids_batch:%d:%d", v.BatchLeft+1, v.PromptIDs)
	case v.PromptIDs > 0:
		return fmt.Sprintf("token_ids:%d", v.PromptIDs)
	}
	return v.Text
}

// keyReason names the branch hashKey took for the routes file: the key came from a session
// header, from a field read out of the routing text, from the text itself, or from an empty
// text (every such request shares one key, "request:").
func keyReason(text, from string) string {
	if from == "text-hash" && text == "" {
		return "empty-text"
	}
	return from
}

// urls are the workers' URLs for a pool of n replicas: the --worker-urls given, then
// http://vllm-<i>:8000 for the replicas beyond them. The URLs place every ring point, so a
// ring of other URLs routes the same keys elsewhere.
func urls(s Settings, n int) []string {
	out := make([]string, n)
	for i := range out {
		if i < len(s.WorkerURLs) {
			out[i] = s.WorkerURLs[i]
		} else {
			out[i] = fmt.Sprintf(DefaultURL, i)
		}
	}
	return out
}

// hashReasons are the reasons of consistent_hash and rendezvous_hash (keyReason).
var hashReasons = []string{"session-header", "session-field", "text-hash", "empty-text"}

// DefaultURL is the URL kvcheck gives replica i when --worker-urls does not name it.
const DefaultURL = "http://vllm-%d:8000"

// consistentHash is vllm-router-consistent-hash with settings s.
func consistentHash(s Settings) sim.PolicyInfo {
	return sim.PolicyInfo{
		Name:      "vllm-router-consistent-hash",
		About:     "vLLM Router --policy consistent_hash: a session header (x-session-id, x-user-id, x-tenant-id, x-correlation-id, x-request-id, x-trace-id), else the routing text, on a ring of 160 points a worker; a chat without headers or session_params.session_id hashes \"\" and every such request goes to one worker",
		Family:    sim.FamilySession,
		Product:   display,
		Source:    "vllm-project/router@e667ebb src/policies/consistent_hash.rs:21-450, hash_key.rs:11-229, protocols/spec.rs:542-557",
		NeedsText: true,
		Reasons:   hashReasons,
		New: func(_ sim.Config, _ int) sim.Policy {
			return &consistentHashPolicy{s: s}
		},
	}
}

// consistentHashPolicy is ConsistentHashPolicy::select_worker_with_headers
// (consistent_hash.rs:331-450). For each request:
//
//  1. The ring is rebuilt when the workers change (a replica added): 160 points a worker at
//     fbi_hash("<url>:<i>"), a later worker's point replacing an earlier one's at the same
//     hash (update_hash_ring).
//  2. The key (hashKey): the first non-empty header of x-session-id, x-user-id, x-tenant-id,
//     x-correlation-id, x-request-id, x-trace-id; else session_params.session_id, user,
//     session_id or user_id read out of the routing text (routingText, which for a chat is its
//     session_params.session_id and for a completion its prompt); else "request:<text>", or
//     past 100 bytes "request_hash:<fbi_hash of the text>".
//  3. The worker of the first ring point at or after fbi_hash(key), wrapping round.
//
// Every worker is healthy here, so the fallbacks to the first healthy worker never run.
// Memory: the ring, 160 points a replica.
//
// Reasons: session-header, session-field, text-hash (the text or its hash keys the request),
// empty-text (a chat without session_params.session_id, or an empty prompt: one key for all).
type consistentHashPolicy struct {
	s    Settings
	ring ring
}

// Route implements sim.Policy.
func (p *consistentHashPolicy) Route(f *sim.Pool, j *sim.Job) (int, string) {
	if len(p.ring.urls) != f.Size() {
		p.ring = newRing(urls(p.s, f.Size()), VirtualNodes)
	}
	v := j.Request().View
	text := routingText(v)
	key, from := hashKey(text, v.Headers)
	return p.ring.owner(key), keyReason(text, from)
}

// rendezvousHash is vllm-router-rendezvous-hash with settings s.
func rendezvousHash(s Settings) sim.PolicyInfo {
	return sim.PolicyInfo{
		Name:      "vllm-router-rendezvous-hash",
		About:     "vLLM Router --policy rendezvous_hash: consistent_hash's key, the worker whose fbi_hash(\"<key>:<url>\") is highest",
		Family:    sim.FamilySession,
		Product:   display,
		Source:    "vllm-project/router@e667ebb src/policies/rendezvous_hash.rs:42-83, hash_key.rs:11-229",
		NeedsText: true,
		Reasons:   hashReasons,
		New: func(_ sim.Config, _ int) sim.Policy {
			return &rendezvousPolicy{s: s}
		},
	}
}

// rendezvousPolicy is RendezvousHashPolicy::select_worker_with_headers (rendezvous_hash.rs:
// 42-83): consistent_hash's key (hashKey), every worker scored fbi_hash("<key>:<url>"), the
// highest taking the request; among equal scores the last worker, as Rust's max_by_key keeps
// the last maximum (fbi_hash has 2^23 - 1 values, so ties happen). Reasons as consistent_hash's.
type rendezvousPolicy struct {
	s    Settings
	urls []string
}

// Route implements sim.Policy.
func (p *rendezvousPolicy) Route(f *sim.Pool, j *sim.Job) (int, string) {
	if len(p.urls) != f.Size() {
		p.urls = urls(p.s, f.Size())
	}
	v := j.Request().View
	text := routingText(v)
	key, from := hashKey(text, v.Headers)
	best, bestScore := 0, uint64(0)
	for i, u := range p.urls {
		if sc := fbiHash(key + ":" + u); i == 0 || sc >= bestScore {
			best, bestScore = i, sc
		}
	}
	return best, keyReason(text, from)
}
