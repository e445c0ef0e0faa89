package sim

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvcheck/kvcheck/internal/usage"
)

// flagsGiven is a Changed for the flags named.
func flagsGiven(names ...string) func(string) bool {
	return func(f string) bool { return slices.Contains(names, f) }
}

// TestOptionsCheck holds simulate's usage errors, each naming the flag at fault, and the
// sweep the defaults give.
func TestOptionsCheck(t *testing.T) {
	withTrace := func(f func(*Options)) Options {
		o := DefaultOptions()
		o.Source.Trace = "t.jsonl"
		f(&o)
		return o
	}
	tests := []struct {
		name string
		o    Options
		want string // "" passes
	}{
		{"defaults with a trace", withTrace(func(*Options) {}), ""},
		{"no source", DefaultOptions(), "--trace is required"},
		{"two sources", withTrace(func(o *Options) { o.Source.Requests = "r.jsonl" }), "give one of --trace, --requests and --recording"},
		{"request flag with a trace", withTrace(func(o *Options) { o.Changed = flagsGiven("rate") }), "--rate does not apply to this trace source"},
		{"block size with recordings", Options{Source: Source{Recordings: []string{"a.kvtap"}}, Changed: flagsGiven("block-size")}, "--block-size does not apply"},
		{"output tokens with a trace", withTrace(func(o *Options) { o.Changed = flagsGiven("output-tokens") }), "--output-tokens does not apply"},
		{"zero rate", withTrace(func(o *Options) { o.Source.RequestLog.Rate = 0 }), "--rate 0: want a positive number"},
		{"max block refs", withTrace(func(o *Options) { o.Source.MaxRefs = 0 }), "--max-block-refs 0"},
		{"block size with tokenize", func() Options {
			o := DefaultOptions()
			o.Source.Requests, o.Tokenize.URL, o.Changed = "r.jsonl", "http://x", flagsGiven("block-size", "tokenize")
			return o
		}(), "--block-size does not go with --tokenize"},
		{"replicas out of range", withTrace(func(o *Options) { o.Replicas = "2,0" }), `--replicas "0": want comma-separated integers from 1 to 1024`},
		{"no replicas", withTrace(func(o *Options) { o.Replicas = " , " }), "--replicas: no values"},
		{"unknown policy", withTrace(func(o *Options) { o.Policies = "fastest" }), `--policies: unknown policy "fastest"`},
		{"emulations refused", withTrace(func(o *Options) {
			o.Emulations = func() ([]PolicyInfo, error) { return nil, usage.Errorf(`--sglang-defaults "rust": want cli`) }
		}), `--sglang-defaults "rust": want cli`},
		{"negative block size", withTrace(func(o *Options) { o.Source.BlockSize = -1 }), "--block-size -1"},
		{"siblings", withTrace(func(o *Options) { o.Siblings = 0 }), "--n 0: want 1 to 1024"},
		{"max running", withTrace(func(o *Options) { o.MaxRunning = 0 }), "--max-running 0"},
		{"negative prefill", withTrace(func(o *Options) { o.Prefill = -time.Millisecond }), "--prefill-per-token and --decode-per-token"},
		{"negative beta", withTrace(func(o *Options) { o.Params.Beta = -1 }), "--beta, --epsilon"},
		{"negative add-replica-at", withTrace(func(o *Options) { o.AddReplicaAt, o.Changed = -time.Second, flagsGiven("add-replica-at") }), "--add-replica-at -1s"},
		{"add-replica-at at the most replicas", withTrace(func(o *Options) {
			o.Replicas, o.Changed = "4,1024", flagsGiven("add-replica-at")
		}), "--add-replica-at needs --replicas below 1024"},
		{"bad tokenize", func() Options {
			o := DefaultOptions()
			o.Source.Requests, o.Tokenize.Concurrency = "r.jsonl", 0
			return o
		}(), "--concurrency 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.o.Check()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Check: %v, want nil", err)
			case tt.want == "":
			case err == nil || !strings.Contains(err.Error(), tt.want) || !usage.Is(err):
				t.Fatalf("Check: %v, want a usage error containing %q", err, tt.want)
			}
		})
	}

	s, err := withTrace(func(o *Options) { o.Replicas = "8, 2,8" }).Check()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Replicas, []int{8, 2}) || !slices.Equal(s.Policies, PolicyNames()) || s.Base.AddReplicaAt != -1 ||
		s.Base.Model != DefaultModel() || s.Base.Siblings != 1 || s.Base.Seed != 1 {
		t.Errorf("defaults: sweep %+v; want replicas [8 2] in the order given, every policy, no added replica, the default model", s)
	}
	s, _ = withTrace(func(o *Options) { o.AddReplicaAt, o.Changed = 90*time.Second, flagsGiven("add-replica-at") }).Check()
	if s.Base.AddReplicaAt != 90 {
		t.Errorf("--add-replica-at 90s: AddReplicaAt = %v, want 90 seconds", s.Base.AddReplicaAt)
	}
	// The sweep runs the emulations the options give, and --policies may name them.
	if s.Emulations != nil {
		t.Errorf("defaults: emulations %v, want none", s.Emulations)
	}
	emu := PolicyInfo{Name: "emulated", New: roundRobinInfo.New}
	s, err = withTrace(func(o *Options) {
		o.Policies, o.Emulations = "emulated", func() ([]PolicyInfo, error) { return []PolicyInfo{emu}, nil }
	}).Check()
	if err != nil || len(s.Emulations) != 1 || s.Emulations[0].Name != "emulated" || !slices.Equal(s.Policies, []string{"emulated"}) {
		t.Errorf("with an emulation: sweep %+v, %v; want it given and named", s, err)
	}
}

// TestOptionsRun runs a sweep over testdata/source/same_prompt.jsonl: four requests of the
// same 1100-token prompt (three 512-token blocks), one a second. A request can hit at most
// floor((1100-1)/512) = 2 blocks (the N-1 rule). On one replica, round-robin misses the first
// request and hits 2 blocks on each of the other three: 6 of 12 block references. On two
// replicas each replica misses once and then hits once: 4 of 12.
func TestOptionsRun(t *testing.T) {
	o := DefaultOptions()
	o.Source.Trace = "testdata/source/same_prompt.jsonl"
	o.Replicas, o.KVBlocks, o.Policies = "1,2", "8", "round-robin"
	rep, err := o.Run(context.Background(), &discard{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]int64{1: 6, 2: 4}
	if len(rep.Fleets) != 2 {
		t.Fatalf("%d fleets, want 2 (1 and 2 replicas of 8 blocks)", len(rep.Fleets))
	}
	for _, f := range rep.Fleets {
		r := f.Results[0]
		if f.KVBlocks != 8 || r.Policy != "round-robin" || r.BlockRefs != 12 || r.HitBlocks != want[f.Replicas] {
			t.Errorf("%d replicas x %d blocks, %s: %d of %d blocks hit, want %d of 12", f.Replicas, f.KVBlocks, r.Policy, r.HitBlocks, r.BlockRefs, want[f.Replicas])
		}
	}

	// --kv-tokens is turned into blocks of the trace's 512 tokens: 4096 tokens are 8 blocks.
	o.KVBlocks, o.KVTokens = "", "4096"
	if rep, err = o.Run(context.Background(), &discard{}); err != nil || rep.Fleets[0].KVBlocks != 8 {
		t.Fatalf("--kv-tokens 4096: %v, fleets %+v; want 8 blocks", err, rep.Fleets)
	}
	o.KVTokens = "511"
	if _, err := o.Run(context.Background(), &discard{}); err == nil || err.Error() != "--kv-tokens 511 is less than one 512-token block" || !usage.Is(err) {
		t.Errorf("--kv-tokens 511: %v, want the usage error naming the block", err)
	}
	// The last request arrives at 3 s: a replica added at 3 s sees it, one at 3.001 s none.
	o.KVTokens, o.Changed = "4096", flagsGiven("add-replica-at")
	o.AddReplicaAt = 3 * time.Second
	if _, err := o.Run(context.Background(), &discard{}); err != nil {
		t.Errorf("--add-replica-at 3s: %v", err)
	}
	o.AddReplicaAt = 3001 * time.Millisecond
	if _, err := o.Run(context.Background(), &discard{}); err == nil || !strings.Contains(err.Error(), "after the trace's last request (at 3s)") || !usage.Is(err) {
		t.Errorf("--add-replica-at 3.001s: %v, want the usage error naming the last request", err)
	}
	// A trace whose format cannot be told is a usage error naming --format.
	o = DefaultOptions()
	o.Source.Trace = "testdata/source/same_prompt.txt"
	if _, err := o.Run(context.Background(), &discard{}); err == nil || !strings.Contains(err.Error(), "give --format mooncake or --format azure") || !usage.Is(err) {
		t.Errorf("a .txt trace: %v, want the usage error naming --format", err)
	}
}

// discard is a Reporter that keeps nothing.
type discard struct{}

func (discard) Progress(string, ...any) {}
func (discard) Done()                   {}
func (discard) Note(string, ...any)     {}
