package sim

// Twins are the requests a trace sends as copies of a prompt still in prefill: siblings sent
// as separate requests (an agent asking for several samples of one prompt at once), each of
// which waits for the first copy's prefill on the replica that holds it or computes the prompt
// again on another.
type Twins struct {
	// Requests counts the copies after the first, Tokens their prompt tokens.
	Requests int
	Tokens   int64
}

// TwinsApart counts the requests of one sample (n at most 1) whose prompt is an earlier
// request's (the same blocks and length: block keys are chained, so the last key and the
// length name the prompt) arriving within that earlier one's prefill in model m: its prompt
// tokens x m.PrefillPerToken after it arrived, the longest that prefill takes uncached. A copy
// arriving later starts a new group. One map entry per distinct prompt, 32 bytes each: at most
// one per request of the trace, which is already held.
func TwinsApart(t *Trace, m Model) Twins {
	type key struct {
		last   uint64
		tokens int
	}
	first := make(map[key]float64)
	var out Twins
	for i := range t.Requests {
		r := &t.Requests[i]
		if r.N > 1 || len(r.Blocks) == 0 {
			continue
		}
		k := key{r.Blocks[len(r.Blocks)-1], r.InputTokens}
		at, ok := first[k]
		if ok && r.Arrival-at <= float64(r.InputTokens)*m.PrefillPerToken {
			out.Requests++
			out.Tokens += int64(r.InputTokens)
			continue
		}
		first[k] = r.Arrival
	}
	return out
}
