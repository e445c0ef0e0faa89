package sim

// Policy picks a replica for each request, reading the pool of replicas as the router would see
// it, and says which branch of its rule it took. Implementations keep their own state (counters,
// rings, indexes) and must be deterministic for a given Config.Seed. Router emulations live in
// their product's package (internal/router/<product>) and reach the simulator through this
// interface; the idealised policies live here.
type Policy interface {
	// Route returns the replica (0 to p.Size()-1) and the reason: a short stable string
	// naming the branch the router took (prefix-match, least-loaded, imbalanced,
	// no-match-random, session-key, round-robin, ...), listed in each policy's doc comment.
	Route(p *Pool, j *Job) (replica int, reason string)
}

// Observer is a Policy that tracks the requests it routed the way a router does from the
// response stream: the first token ends a request's prefill, the last one ends the request.
// The simulator tells it both.
type Observer interface {
	Prefilled(j *Job)
	Finished(j *Job)
}

// Family groups the policies by what a team would deploy for them.
type Family string

// The families.
const (
	FamilyBalance Family = "balance" // round-robin, random, least-loaded: no affinity
	FamilySession Family = "session" // session affinity, plain or with bounded load
	FamilyKV      Family = "kv"      // prefix- or KV-aware routers
)

// PolicyInfo describes one routing policy: an idealised one (Policies) or the emulation of a
// router product with its settings (internal/router builds those).
type PolicyInfo struct {
	// Name is the policy's name on the command line and in results.
	Name string
	// About says in one line what the policy does.
	About string
	// Baseline is true for the policy that "prefill tokens saved" is measured against.
	Baseline bool
	// Family is what a team would deploy for it (FamilyKV when empty).
	Family Family
	// Reasons are every reason its Route gives (Policy.Route), named by constants next to
	// the policy: simulate --help lists them, and a test replays every policy on varied
	// traffic to hold each route's reason to them.
	Reasons []string
	// Product and Source are set for an emulation of a shipped router: the product's display
	// name and the upstream source the emulation follows.
	Product, Source string
	// Label, for an emulation whose product ships more than one default set, names the set
	// it runs with ("CLI defaults"; the product's Variant.Label).
	Label string
	// NeedsText is set for an emulation that reads the request's text or fields (Request.View):
	// it cannot run on a trace of block hashes.
	NeedsText bool
	// KeepsText is set for an emulation that keeps a tree of the characters it routed
	// (radixTree): its replay holds up to the traffic's distinct text, so a caller running
	// replays at once runs these one at a time.
	KeepsText bool
	// ReadsIndex is set for the policies that read the pool's block index (Pool.Overlaps,
	// Pool.Runs): only their replays keep it up to date, which saves two index updates per
	// block cached or evicted for the others.
	ReadsIndex bool
	// Draws is set for a policy that places requests by a seeded draw, not only to break exact
	// ties between replicas it scores alike: a uniform or weighted choice of a replica (random,
	// a shuffle, the two candidates of power of two, the first replica a session then sticks
	// to) or a seeded hash standing in for what a trace does not carry (a hash ring's points).
	// Another Config.Seed places the same traffic otherwise, so one replay is one sample of
	// what the policy does: assess's ranking judges such a row over several seeds (rank.Seeds)
	// and replays the others once.
	Draws bool
	// Check, when set, refuses a configuration the product itself refuses to start with (a
	// *CannotRunError saying why): the simulation then returns it, never a figure.
	Check func(c Config, t *Trace) error
	// New returns a fresh policy for one replay of a trace of blocks of blockSize tokens.
	New func(c Config, blockSize int) Policy
}

// variant names the settings a sweep runs info with, for its routes: none for an idealised
// policy, shipped (and which default set) for an emulation.
func (info PolicyInfo) variant() (variant, label string) {
	if info.Product == "" {
		return "", ""
	}
	return "shipped", info.Label
}

// FamilyOf is the family of the policy named, among the idealised policies and emulations;
// FamilyKV for a name it does not know.
func FamilyOf(name string, emulations []PolicyInfo) Family {
	for _, l := range [][]PolicyInfo{Policies(), emulations} {
		for _, p := range l {
			if p.Name == name && p.Family != "" {
				return p.Family
			}
		}
	}
	return FamilyKV
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
		kvCostInfo,
		kvLoadInfo,
		kvDecayInfo,
	}
}

// Aliases are former names of policies, each with the name it now has: kv-dynamo, the
// idealised Dynamo-style cost, was renamed kv-cost so as not to be taken for dynamo-kv, the
// emulation of Dynamo's KV router. ParsePolicies and every lookup take them.
var Aliases = map[string]string{"kv-dynamo": "kv-cost"}

// Canonical is name, or the policy it is a former name of (Aliases).
func Canonical(name string) string {
	if n, ok := Aliases[name]; ok {
		return n
	}
	return name
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

// Mix64 is the splitmix64 finaliser: a fast, well-spread 64-bit hash of x, from which the
// simulator's policies and emulations draw their seeded choices.
func Mix64(x uint64) uint64 { return mix64(x) }

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
