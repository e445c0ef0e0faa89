package assess

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// agentSeparate is agentFanOut with each task's four samples sent as four requests at once.
func agentSeparate(seed uint64, tasks int) *reqLog {
	rng := rand.New(rand.NewPCG(seed, 3))
	l := &reqLog{name: "agent.jsonl"}
	for i := range tasks {
		content := fmt.Sprintf("Task %d context: ", i) + text(rng, 2000)
		for range 4 {
			body := chat(msg{"role": "user", "content": content})
			body["max_tokens"] = 256
			body["timestamp"] = 1_700_000_000 + float64(i)/2
			l.add(body)
		}
	}
	return l
}

// headerSessions moves each request's metadata.session_id into an x-session-id header.
func headerSessions(l *reqLog) *reqLog {
	for _, b := range l.lines {
		if md, ok := b["metadata"].(map[string]any); ok {
			b["headers"] = map[string]any{"x-session-id": md["session_id"]}
			delete(b, "metadata")
		}
	}
	return l
}

// cacheLast puts an Anthropic cache_control marker on each request's last message.
func cacheLast(l *reqLog) *reqLog {
	for _, b := range l.lines {
		ms := b["messages"].([]msg)
		out := make([]any, len(ms))
		for i, m := range ms {
			out[i] = m
		}
		last := ms[len(ms)-1]
		out[len(ms)-1] = map[string]any{"role": last["role"], "content": []any{map[string]any{"type": "text", "text": last["content"], "cache_control": map[string]any{"type": "ephemeral"}}}}
		b["messages"] = out
	}
	return l
}

// toolsShuffled is n requests carrying the same 12 tools (about 150 tokens each) in a random
// order, a shared 500-token system prompt and a 40-token question.
func toolsShuffled(seed uint64, n int) *reqLog {
	rng := rand.New(rand.NewPCG(seed, 5))
	var tools []any
	for k := range 12 {
		tools = append(tools, map[string]any{"type": "function", "function": map[string]any{"name": fmt.Sprintf("tool_%d", k), "description": strings.TrimSpace(text(rng, 150)),
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}}})
	}
	sys := "You are an agent with tools. " + text(rng, 500)
	l := &reqLog{name: "tools.jsonl"}
	for i := range n {
		order := rng.Perm(len(tools))
		ts := make([]any, len(tools))
		for j, k := range order {
			ts[j] = tools[k]
		}
		body := chat(msg{"role": "system", "content": sys}, msg{"role": "user", "content": text(rng, 40)})
		body["tools"] = ts
		body["timestamp"] = 1_700_000_000 + float64(i)
		l.add(body)
	}
	return l
}
