package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/fleet"
	"github.com/kvcheck/kvcheck/internal/sim"
)

// TestAuditTokenizeDemoFleet runs kvcheck audit --tokenize against each replica of the demo's
// fleets, as a user would: the block size is read from the replica's own /metrics, every token
// comes from its /tokenize, and its chat template is probed for a date.
func TestAuditTokenizeDemoFleet(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f := startFleet(t, fleet.Options{Replicas: append(demoFleet(1), demoAuditReplica(1))})
	for _, r := range f.Replicas() {
		t.Run(r.Name(), func(t *testing.T) {
			var out, errOut bytes.Buffer
			args := []string{"audit", "--tokenize", r.URL(), "--requests", "testdata/demo/requests.jsonl", "-o", "json"}
			if code := run(ctx, args, streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, []string{"NO_COLOR=1"}); code != exitOK {
				t.Fatalf("exit code %d, stderr:\n%s", code, errOut.String())
			}
			var doc struct {
				BlockSize int    `json:"block_size"`
				Tokens    string `json:"tokens"`
				Templates []struct {
					File    string `json:"file"`
					Verdict string `json:"verdict"`
				} `json:"templates"`
				Findings []struct {
					Code      string `json:"code"`
					Block     int    `json:"block"`
					Estimated bool   `json:"estimated"`
				} `json:"findings"`
				Requests struct {
					Estimated        bool  `json:"estimated"`
					Requests         int64 `json:"requests"`
					UniqueFirstBlock int64 `json:"unique_first_block"`
				} `json:"requests"`
			}
			if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
				t.Fatalf("decode: %v\n%s", err, out.String())
			}
			if got, want := doc.BlockSize, r.Config().BlockSize; got != want {
				t.Errorf("block size %d, want the replica's %d", got, want)
			}
			if doc.Tokens != "exact" || doc.Requests.Estimated || doc.Requests.Requests != 12 {
				t.Errorf("tokens %q, requests %+v: want exact tokens for 12 requests", doc.Tokens, doc.Requests)
			}
			wantVerdict := "clean"
			if r.Config().DateLine {
				wantVerdict = "breaker"
			}
			if len(doc.Templates) != 1 || doc.Templates[0].File != r.URL()+" (server chat template)" || doc.Templates[0].Verdict != wantVerdict {
				t.Errorf("templates %+v, want the server's chat template, %s", doc.Templates, wantVerdict)
			}
			// The agent's six requests start with the time, whose hour is token 16 without a
			// date line: block 1 with 16-token blocks, so block 0 is shared; with 64-token blocks
			// (and the date line's 20 tokens before it) the first block is unique.
			wantUnique := int64(0)
			if r.Config().BlockSize == 64 {
				wantUnique = 6
			}
			if doc.Requests.UniqueFirstBlock != wantUnique {
				t.Errorf("%d requests with a unique first block, want %d", doc.Requests.UniqueFirstBlock, wantUnique)
			}
			for _, x := range doc.Findings {
				if x.Estimated {
					t.Errorf("finding %s is estimated; with --tokenize every position is exact", x.Code)
				}
			}
		})
	}
}

// The demo's trace is the same for a seed, reads back as a valid Mooncake trace with its
// sessions, and has the shape the demo announces.
func TestDemoTrace(t *testing.T) {
	a, b := demoTrace(1), demoTrace(1)
	if !bytes.Equal(a.data, b.data) {
		t.Fatal("two traces of seed 1 differ")
	}
	if bytes.Equal(a.data, demoTrace(2).data) {
		t.Error("seeds 1 and 2 give the same trace")
	}
	tr, err := sim.ReadMooncake(bytes.NewReader(a.data), "demo", sim.MooncakeBlockSize)
	if err != nil {
		t.Fatal(err)
	}
	sessions := map[string]int{}
	for _, r := range tr.Requests {
		sessions[r.Session]++
	}
	got := []int{len(tr.Requests), len(sessions), len(tr.Notes)}
	want := []int{a.requests, a.conversations, 0}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests, sessions, notes (-want +got):\n%s", diff)
	}
	if a.requests != a.conversations*a.turns {
		t.Errorf("%d requests, want %d conversations x %d turns", a.requests, a.conversations, a.turns)
	}
	if st := sim.Stats(tr); st.BlockRefs != 1920 || st.DistinctBlocks != 512 {
		t.Errorf("%d block references, %d distinct; want 1920 and 512 (8x4 prompt blocks + 48x5x2 own)", st.BlockRefs, st.DistinctBlocks)
	}
}

func TestShellJoin(t *testing.T) {
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
		if got := shellJoin(tt.args); got != tt.want {
			t.Errorf("shellJoin(%q) = %s, want %s", tt.args, got, tt.want)
		}
	}
}

// closeFleet stops a test fleet and fails the test when a server does not close.
func closeFleet(t testing.TB, f *fleet.Fleet) {
	t.Helper()
	if err := f.Close(); err != nil {
		t.Error(err)
	}
}

// startFleet starts an emulated fleet on loopback for one test and closes it at the end.
func startFleet(t *testing.T, o fleet.Options) *fleet.Fleet {
	t.Helper()
	f, err := fleet.New(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeFleet(t, f) })
	return f
}
