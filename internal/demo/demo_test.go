package demo

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/sim"
)

// The demo's trace is the same for a seed, reads back as a valid Mooncake trace with its
// sessions, and has the shape the demo announces.
func TestDemoTrace(t *testing.T) {
	a, b := MooncakeTrace(1), MooncakeTrace(1)
	if !bytes.Equal(a.Data, b.Data) {
		t.Fatal("two traces of seed 1 differ")
	}
	if bytes.Equal(a.Data, MooncakeTrace(2).Data) {
		t.Error("seeds 1 and 2 give the same trace")
	}
	tr, err := sim.ReadMooncake(bytes.NewReader(a.Data), "demo", sim.MooncakeBlockSize)
	if err != nil {
		t.Fatal(err)
	}
	sessions := map[string]int{}
	for _, r := range tr.Requests {
		sessions[r.Session]++
	}
	got := []int{len(tr.Requests), len(sessions), len(tr.Notes)}
	want := []int{a.Requests, a.Conversations, 0}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests, sessions, notes (-want +got):\n%s", diff)
	}
	if a.Requests != a.Conversations*a.Turns {
		t.Errorf("%d requests, want %d conversations x %d turns", a.Requests, a.Conversations, a.Turns)
	}
	if st := sim.Stats(tr); st.BlockRefs != 1920 || st.DistinctBlocks != 512 {
		t.Errorf("%d block references, %d distinct; want 1920 and 512 (8x4 prompt blocks + 48x5x2 own)", st.BlockRefs, st.DistinctBlocks)
	}
}

func TestCommandLine(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"lint", "--diff", "/tmp/x/d.json"}, "lint --diff /tmp/x/d.json"},
		{[]string{"hitrate", "--scrape", "a=http://127.0.0.1:1,b=http://127.0.0.1:2"}, "hitrate --scrape a=http://127.0.0.1:1,b=http://127.0.0.1:2"},
		{[]string{"audit", "my file.txt"}, "audit 'my file.txt'"},
		{[]string{"x", "it's"}, `x 'it'\''s'`},
		{[]string{"x", ""}, "x ''"},
	}
	for _, tt := range tests {
		if got := CommandLine(tt.args); got != tt.want {
			t.Errorf("CommandLine(%q) = %s, want %s", tt.args, got, tt.want)
		}
	}
}

// Inputs keeps a directory it was given (creating it) and removes only a temporary one it made;
// both hold every input file.
func TestInputs(t *testing.T) {
	given := filepath.Join(t.TempDir(), "new", "dir")
	dir, remove, err := Inputs(given)
	if err != nil || dir != given {
		t.Fatalf("Inputs(%q) = %q, %v", given, dir, err)
	}
	if err := remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(given, "requests.jsonl")); err != nil {
		t.Errorf("a given directory lost its files: %v", err)
	}

	tmp, remove, err := Inputs("")
	if err != nil || tmp == "" {
		t.Fatalf(`Inputs("") = %q, %v`, tmp, err)
	}
	if _, err := os.Stat(filepath.Join(tmp, "vllm-dashboard.json")); err != nil {
		t.Errorf("temporary directory misses a file: %v", err)
	}
	if err := remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("temporary directory %s not removed: %v", tmp, err)
	}
}

// TestChatText: the text a router reads follows the blocks: requests of one tenant share the
// system prompt's 64 blocks x 64 characters, a later turn of a conversation extends its earlier
// turn's text, and requests of different tenants differ in their first block's text.
func TestChatText(t *testing.T) {
	tr := ChatText(ChatTrace(1))
	bySession := map[string]*sim.Request{}
	var sameTenant, otherTenant bool
	for i := range tr.Requests {
		r := &tr.Requests[i]
		v := r.View
		if v == nil || !v.Chat || len(v.Text) != 64*len(r.Blocks) || v.Headers["x-session-id"] != r.Session || v.MetadataSession != r.Session || v.Pieces[0].End != 64*ChatSystemBlocks {
			t.Fatalf("request %d: view %+v", i, v)
		}
		if prev, ok := bySession[r.Session]; ok && !strings.HasPrefix(v.Text, prev.View.Text) {
			t.Errorf("request %d does not extend its conversation's earlier text", i)
		}
		bySession[r.Session] = r
		if i > 0 {
			p := &tr.Requests[0]
			switch {
			case r.Blocks[0] == p.Blocks[0]:
				sameTenant = true
				if v.Text[:64*ChatSystemBlocks] != p.View.Text[:64*ChatSystemBlocks] {
					t.Errorf("request %d: same tenant, different system text", i)
				}
			case v.Text[:64] != p.View.Text[:64]:
				otherTenant = true
			}
		}
	}
	if !sameTenant || !otherTenant {
		t.Errorf("the trace should hold both: same tenant %v, other tenant %v", sameTenant, otherTenant)
	}
}
