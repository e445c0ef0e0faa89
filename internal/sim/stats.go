package sim

// TraceStats describes a trace independently of any fleet or policy.
type TraceStats struct {
	// Requests is the number of requests in the trace (before sibling expansion).
	Requests int
	// BlockRefs counts every block of every prompt sent, partial last blocks included: a
	// request sent as n siblings counts n times.
	BlockRefs int64
	// DistinctBlocks is the number of different block keys.
	DistinctBlocks int64
	// Repeats counts the references to a block seen earlier in the trace (a sibling's blocks
	// all repeat the first copy's).
	Repeats int64
	// Ceiling is Repeats/BlockRefs: the block hit rate of one unbounded cache that sees every
	// request, an upper bound for the block hit rate of any fleet and any policy.
	Ceiling float64
	// InputTokens and OutputTokens are the totals over the requests sent, siblings included.
	InputTokens  int64
	OutputTokens int64
	// Duration is the time from the first to the last arrival, in seconds.
	Duration float64
}

// Stats computes the trace's own figures, including its hit-rate ceiling, with each request
// sent as its own n siblings.
func Stats(t *Trace) TraceStats { return SiblingStats(t, 0) }

// SiblingStats is Stats when every request is sent as at least siblings copies (--n), as
// Config.Siblings does: the copies after the first repeat every block, which raises the ceiling.
func SiblingStats(t *Trace, siblings int) TraceStats {
	s := TraceStats{Requests: len(t.Requests)}
	// Distinct blocks are the interned ids, so one bit per distinct block tells a repeat.
	t.intern()
	seen := make([]uint64, (t.distinct+63)/64)
	for i := range t.Requests {
		r := &t.Requests[i]
		k := int64(max(1, r.N, siblings))
		s.InputTokens += k * int64(r.InputTokens)
		s.OutputTokens += k * int64(r.OutputTokens)
		s.BlockRefs += k * int64(len(r.Blocks))
		s.Repeats += (k - 1) * int64(len(r.Blocks))
		for _, id := range t.blockIDs(i) {
			if seen[id/64]&(1<<(id%64)) != 0 {
				s.Repeats++
				continue
			}
			seen[id/64] |= 1 << (id % 64)
		}
	}
	s.DistinctBlocks = int64(t.distinct)
	if s.BlockRefs > 0 {
		s.Ceiling = float64(s.Repeats) / float64(s.BlockRefs)
	}
	if n := len(t.Requests); n > 0 {
		s.Duration = t.Requests[n-1].Arrival - t.Requests[0].Arrival
	}
	return s
}
