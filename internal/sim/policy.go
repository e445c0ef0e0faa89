package sim

// policy picks a replica for a request, reading the fleet as the router would see it.
// Implementations keep their own state (counters, rings, indexes) and must be deterministic for
// a given Config.Seed.
type policy interface {
	route(f *fleet, j *job) int
}

// PolicyInfo describes one routing policy.
type PolicyInfo struct {
	// Name is the policy's name on the command line and in results.
	Name string
	// About says in one line what the policy does.
	About string
	// Baseline is true for the policy that "prefill tokens saved" is measured against.
	Baseline bool
	// Product and Source are set for an emulation of a shipped router (Emulations): the
	// product's name and the upstream source the emulation follows.
	Product, Source string
	// NeedsText is set for an emulation that reads the request's text or fields (Request.View):
	// it cannot run on a trace of block hashes.
	NeedsText bool
	// readsIndex is set for the policies that read the fleet's block index (fleet.overlaps): only
	// their replays keep it up to date, which saves two index updates per block cached or
	// evicted for the others.
	readsIndex bool
	// check, when set, refuses a configuration the product itself refuses to start with (a
	// *CannotRunError saying why): the simulation then returns it, never a figure.
	check     func(c Config, t *Trace) error
	newPolicy func(c Config, blockSize int) policy
}

// Policies lists every policy in the order results are shown: load-only policies first, then
// affinity, then the prefix-aware ones. Each policy lives in a file of its own; adding one is
// that file plus its line here (the list fixes the order of tables; no init() registration).
func Policies() []PolicyInfo {
	return []PolicyInfo{
		randomInfo,
		roundRobinInfo,
		leastLoadedInfo,
		sessionInfo,
		consistentHashInfo,
		approxPrefixInfo,
		kvLongestInfo,
		kvLLMDInfo,
		kvDynamoInfo,
		kvLoadInfo,
		kvDecayInfo,
	}
}

// PolicyNames returns the names of Policies, in order.
func PolicyNames() []string {
	ps := Policies()
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name
	}
	return out
}

// mix64 is the splitmix64 finaliser: a fast, well-spread 64-bit hash of x.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// keyHash hashes a request's affinity key (session id, else block 0) with the seed.
func keyHash(r *Request, seed uint64) (uint64, bool) {
	if r.Session != "" {
		h := uint64(14695981039346656037) // FNV-1a
		for i := 0; i < len(r.Session); i++ {
			h ^= uint64(r.Session[i])
			h *= 1099511628211
		}
		return mix64(h ^ mix64(seed)), true
	}
	if len(r.Blocks) > 0 {
		return mix64(r.Blocks[0] ^ mix64(seed+1)), true
	}
	return 0, false
}
