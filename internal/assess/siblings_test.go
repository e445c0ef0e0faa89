package assess

import (
	"fmt"
	"math/rand/v2"
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
