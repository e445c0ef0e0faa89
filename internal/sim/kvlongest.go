package sim

var kvLongestInfo = PolicyInfo{
	Name:       "kv-longest",
	About:      "naive exact KV-aware: longest cached prefix, ties to the first replica, no load term",
	readsIndex: true,
	newPolicy:  func(Config, int) policy { return kvLongestPolicy{} },
}

// kvLongestPolicy is the naive longest-prefix router: the replica holding the longest prefix of
// the prompt wins, the first one on a tie. When all traffic shares block 0 (a system prompt;
// every Mooncake conversation request), the first replica to cache it wins every later request.
type kvLongestPolicy struct{}

func (kvLongestPolicy) route(f *fleet, j *job) int {
	ovl := f.overlaps(j)
	bi := 0
	for i := 1; i < len(ovl); i++ {
		if ovl[i] > ovl[bi] {
			bi = i
		}
	}
	return bi
}
