package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kvcheck/kvcheck/internal/demo"
	"github.com/kvcheck/kvcheck/internal/fleet"
)

// TestAuditTokenizeDemoFleet runs kvcheck audit --tokenize against each replica of the demo's
// fleets, as a user would: the block size is read from the replica's own /metrics, every token
// comes from its /tokenize, and its chat template is probed for a date.
func TestAuditTokenizeDemoFleet(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f := startFleet(t, fleet.Options{Replicas: append(demo.HitrateFleet(1), demo.AuditReplica(1))})
	for _, r := range f.Replicas() {
		t.Run(r.Name(), func(t *testing.T) {
			var out, errOut bytes.Buffer
			args := []string{"audit", "--tokenize", r.URL(), "--requests", "../../internal/demo/testdata/requests.jsonl", "-o", "json"}
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
