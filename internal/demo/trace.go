package demo

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/kvcheck/kvcheck/internal/sim"
)

// KVBlocks is each replica's cache in the simulate section, a small share of MooncakeTrace's
// distinct blocks: the fleet holds the live conversations only when each is kept on one replica,
// and their system prompts are shared best when conversations with the same prompt meet.
const KVBlocks = 64

// Mooncake is a generated Mooncake-format trace and its shape.
type Mooncake struct {
	Data                                    []byte
	Requests, Conversations, Turns, Prompts int
}

// MooncakeTrace generates multi-turn conversations in Mooncake's JSONL format (512-token blocks
// as hash_ids, timestamps in ms, a session_id per conversation): the simulate section's trace.
// Each conversation starts with one of a few shared system prompts of four blocks; every turn
// resends the whole history plus one new block of question and answer, and ends in a partial
// block of its own.
func MooncakeTrace(seed uint64) Mooncake {
	const (
		conversations = 48
		turns         = 5
		prompts       = 8
		promptBlocks  = 4
		blockTokens   = 512
	)
	rng := rand.New(rand.NewPCG(seed, 0x6b7663686563)) // "kvchec"
	type row struct {
		Timestamp    int64   `json:"timestamp"`
		InputLength  int     `json:"input_length"`
		OutputLength int     `json:"output_length"`
		HashIDs      []int64 `json:"hash_ids"`
		SessionID    string  `json:"session_id"`
	}
	var rows []row
	next := int64(prompts * promptBlocks) // the lowest ids are the system prompts' blocks
	for c := range conversations {
		p := int64(rng.IntN(prompts))
		var history []int64
		for b := range int64(promptBlocks) {
			history = append(history, p*promptBlocks+b)
		}
		at := time.Duration(c)*1500*time.Millisecond + time.Duration(rng.IntN(1000))*time.Millisecond
		for range turns {
			history = append(history, next)
			next++
			ids := append(append([]int64{}, history...), next) // the partial last block
			next++
			rows = append(rows, row{
				Timestamp:    at.Milliseconds(),
				InputLength:  (len(ids)-1)*blockTokens + 1 + rng.IntN(blockTokens-1),
				OutputLength: 100 + rng.IntN(300),
				HashIDs:      ids,
				SessionID:    fmt.Sprintf("conv-%02d", c),
			})
			at += time.Duration(8000+rng.IntN(12000)) * time.Millisecond
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// Mooncake traces are in arrival order; the simulator would sort them, but say it right.
	slices.SortStableFunc(rows, func(a, b row) int { return cmp.Compare(a.Timestamp, b.Timestamp) })
	for _, r := range rows {
		_ = enc.Encode(r) // encoding these plain values cannot fail
	}
	return Mooncake{Data: buf.Bytes(), Requests: len(rows), Conversations: conversations, Turns: turns, Prompts: prompts}
}

// The built-in chat trace's shape: conversations start over ten minutes with one of the
// tenants' assistants, each has a few turns a short think time apart, and every turn adds a user
// message and an answer to the prompt.
const (
	ChatSessions     = 240
	ChatTenants      = 32
	ChatSystemBlocks = 64 // 1,024 tokens per tenant's system prompt
	chatTurnBlocks   = 6  // new blocks per turn (user message + previous answer)
	ChatBlockSize    = 16
)

// ChatTrace builds the assess section's deterministic multi-turn chat trace in 16-token blocks
// over the tenants' system prompts: 32 x 1,024 tokens of shared prefixes against the demo
// replicas' 16,384 tokens of KV each. Round-robin and session affinity spread every tenant over
// every replica, whose caches then cycle through all 32 prompts; a KV-aware router gives each
// replica its own tenants, which fit. That is where the answer is a KV-aware router.
func ChatTrace(seed uint64) *sim.Trace {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	var next uint64 = 1
	newBlock := func() uint64 { next++; return next }
	systems := make([][]uint64, ChatTenants)
	for t := range systems {
		for range ChatSystemBlocks {
			systems[t] = append(systems[t], newBlock())
		}
	}
	var reqs []sim.Request
	for sess := range ChatSessions {
		at := rng.Float64() * 600
		blocks := slices.Clone(systems[rng.IntN(ChatTenants)])
		turns := 1 + rng.IntN(3)
		for range turns {
			for range chatTurnBlocks - 2 + rng.IntN(5) {
				blocks = append(blocks, newBlock())
			}
			in := len(blocks)*ChatBlockSize - rng.IntN(ChatBlockSize)
			reqs = append(reqs, sim.Request{Arrival: at, Session: fmt.Sprintf("chat-%d", sess), Blocks: slices.Clone(blocks),
				InputTokens: in, OutputTokens: 64 + rng.IntN(128), N: 1})
			at += 10 + rng.Float64()*50
		}
	}
	slices.SortStableFunc(reqs, func(a, b sim.Request) int { return cmp.Compare(a.Arrival, b.Arrival) })
	return &sim.Trace{Name: "built-in chat trace", Format: "mooncake", BlockSize: ChatBlockSize, PrefixInfo: true, Requests: reqs}
}

// ChatText gives every request of a ChatTrace what a router reading the request sees: a chat
// whose system message is the tenant's prompt and whose second message is the conversation so
// far, each block standing for 64 characters of its own (16 tokens at about 4 characters a
// token, derived from the block's key, so equal blocks are equal text and every prefix of
// blocks is a prefix of text), the session id in the x-session-id header and in
// metadata.session_id, and no cache_control marker. The demo's traffic is emulated: this is the
// text the blocks stand for, so the routers that read text (production-stack, SGLang, Ray,
// LiteLLM) see the same shared prefixes as the engines and can be ranked beside the others.
func ChatText(tr *sim.Trace) *sim.Trace {
	for i := range tr.Requests {
		r := &tr.Requests[i]
		var b strings.Builder
		b.Grow(len(r.Blocks) * 64)
		system := min(len(r.Blocks), ChatSystemBlocks)
		for _, key := range r.Blocks {
			x := key * 0x9e3779b97f4a7c15
			fmt.Fprintf(&b, "%016x%016x%016x%016x", x, x^0x5bd1e995, x^0x27d4eb2f, x^0x165667b1)
		}
		text := b.String()
		contents := []string{text[:64*system]}
		if len(text) > 64*system {
			contents = append(contents, text[64*system:])
		}
		r.View = sim.StringChat(contents...)
		r.View.Headers, r.View.MetadataSession = map[string]string{"x-session-id": r.Session}, r.Session
	}
	tr.Name = "built-in chat trace (with its text)"
	return tr
}
