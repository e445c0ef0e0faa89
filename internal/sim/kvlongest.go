package sim

var kvLongestInfo = PolicyInfo{
	Name:       "kv-longest",
	About:      "naive exact KV-aware: longest cached prefix, ties to the first replica, no load term",
	ReadsIndex: true,
	Family:     FamilyKV,
	Reasons:    []string{ReasonPrefixMatch, reasonNoMatchFirst},
	New:        func(Config, int) Policy { return kvLongestPolicy{} },
}

// kvLongestPolicy is the naive longest-prefix router: the replica holding the longest prefix of
// the prompt wins, the first one on a tie. When all traffic shares block 0 (a system prompt;
// every Mooncake conversation request), the first replica to cache it wins every later request.
// Reasons: prefix-match (the winner holds some of the prefix), no-match-first (none does:
// replica 0).
type kvLongestPolicy struct{}

func (kvLongestPolicy) Route(f *Pool, j *Job) (int, string) {
	ovl := f.overlaps(j)
	bi := 0
	for i := 1; i < len(ovl); i++ {
		if ovl[i] > ovl[bi] {
			bi = i
		}
	}
	if ovl[bi] == 0 {
		return bi, reasonNoMatchFirst
	}
	return bi, ReasonPrefixMatch
}

// The reasons of a prefix-aware choice: the replica chosen holds some of the request's prefix
// (prefix-match), or none does and load chose it (no-match; kv-longest's no-match-first: the
// first replica). Routers use the first two for the same branches of theirs.
const (
	ReasonPrefixMatch  = "prefix-match"
	ReasonNoMatch      = "no-match"
	reasonNoMatchFirst = "no-match-first"
)

// matchReasons are the reasons matchReason gives.
var matchReasons = []string{ReasonPrefixMatch, ReasonNoMatch}

// matchReason names a scoring policy's choice: prefix-match when the replica chosen holds some
// of the request's prefix (overlap > 0), else no-match (the load terms alone chose it).
func matchReason(overlap int) string {
	if overlap > 0 {
		return ReasonPrefixMatch
	}
	return ReasonNoMatch
}
