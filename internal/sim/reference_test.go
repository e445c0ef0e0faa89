package sim

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// referencePolicies are the policies testdata/sim/reference.py implements.
var referencePolicies = []string{"round-robin", "least-loaded", "kv-longest", "kv-cost", "kv-load"}

type referenceOutput struct {
	Stats struct {
		Requests       int   `json:"requests"`
		BlockRefs      int64 `json:"block_refs"`
		DistinctBlocks int64 `json:"distinct_blocks"`
		Repeats        int64 `json:"repeats"`
	} `json:"stats"`
	Results []struct {
		Policy     string  `json:"policy"`
		HitTokens  int64   `json:"hit_tokens"`
		HitBlocks  int64   `json:"hit_blocks"`
		PerReplica []int   `json:"per_replica"`
		Evictions  int64   `json:"evictions"`
		TTFTP99    float64 `json:"ttft_p99"`
		Seconds    float64 `json:"seconds"`
		CPUSeconds float64 `json:"cpu_seconds"`
	} `json:"results"`
}

// runReference runs the Python reference over the Mooncake trace, skipping when python3 or the
// corpus is missing.
func runReference(t testing.TB, replicas, kvBlocks, repeat int, policies []string) referenceOutput {
	t.Helper()
	dir := os.Getenv("KVCHECK_CORPUS")
	if dir == "" {
		t.Skip("KVCHECK_CORPUS not set")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	cmd := exec.Command(py, filepath.Join("..", "..", "testdata", "sim", "reference.py"),
		"--trace", filepath.Join(dir, "traces", "mooncake_conversation_trace.jsonl"),
		"--replicas", strconv.Itoa(replicas), "--kv-blocks", strconv.Itoa(kvBlocks),
		"--repeat", strconv.Itoa(repeat), "--policies", strings.Join(policies, ","))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("reference.py: %v", err)
	}
	var ref referenceOutput
	if err := json.Unmarshal(out, &ref); err != nil {
		t.Fatalf("reference.py output: %v", err)
	}
	return ref
}

// TestReferenceAgrees checks the simulator against the straightforward Python model on the real
// trace: the same routes (per-replica counts), hits, evictions and TTFT p99, policy by policy.
func TestReferenceAgrees(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the Python reference (a few seconds)")
	}
	tr := mooncake(t)
	ref := runReference(t, 8, 2048, 1, referencePolicies)
	st := Stats(tr)
	if ref.Stats.Requests != st.Requests || ref.Stats.BlockRefs != st.BlockRefs || ref.Stats.DistinctBlocks != st.DistinctBlocks || ref.Stats.Repeats != st.Repeats {
		t.Errorf("trace stats: reference %+v, simulator %+v", ref.Stats, st)
	}
	for _, want := range ref.Results {
		t.Run(want.Policy, func(t *testing.T) {
			c := Config{Replicas: 8, KVBlocks: 2048, AddReplicaAt: -1, Model: DefaultModel(), Params: DefaultParams(), Seed: 1}
			got, err := Simulate(tr, c, want.Policy)
			if err != nil {
				t.Fatal(err)
			}
			if got.HitTokens != want.HitTokens || got.HitBlocks != want.HitBlocks || got.Evictions != want.Evictions {
				t.Errorf("hit tokens %d, hit blocks %d, evictions %d; reference %d, %d, %d",
					got.HitTokens, got.HitBlocks, got.Evictions, want.HitTokens, want.HitBlocks, want.Evictions)
			}
			if d := cmp.Diff(want.PerReplica, got.PerReplica); d != "" {
				t.Errorf("per-replica requests (-reference +simulator):\n%s", d)
			}
			if d := got.TTFTP99 - want.TTFTP99; d > 1e-6 || d < -1e-6 {
				t.Errorf("ttft p99 %.6f, reference %.6f", got.TTFTP99, want.TTFTP99)
			}
		})
	}
}
