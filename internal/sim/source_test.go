package sim

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kvcheck/kvcheck/internal/finding"
)

// KVBlocks keeps whole blocks only: 1<<20 tokens in 512-token blocks is 2048 blocks, 1000
// tokens in 16-token blocks is 62 (992 tokens; the last 8 fill no block), and 511 tokens
// hold no 512-token block at all.
func TestKVBlocks(t *testing.T) {
	got, err := KVBlocks([]int{1 << 20, 512}, 512)
	if err != nil || !slices.Equal(got, []int{2048, 1}) {
		t.Fatalf("KVBlocks(1<<20, 512 / 512) = %v, %v; want [2048 1]", got, err)
	}
	if got, err := KVBlocks([]int{1000}, 16); err != nil || !slices.Equal(got, []int{62}) {
		t.Fatalf("KVBlocks(1000 / 16) = %v, %v; want [62]", got, err)
	}
	_, err = KVBlocks([]int{4096, 511}, 512)
	var ce *CapacityError
	if !errors.As(err, &ce) || ce.Tokens != 511 || ce.BlockSize != 512 {
		t.Fatalf("KVBlocks(511 / 512) error = %v; want a CapacityError for 511 tokens", err)
	}
}

// A trace whose last request arrives at 90.0125 s: 90 s is inside it, 90.0125 s is its last
// instant (still inside), 90.013 s is after; the arrival shown is cut to 1m30.012s.
func TestAfterEnd(t *testing.T) {
	tr := &Trace{Requests: []Request{{Arrival: 0}, {Arrival: 90.0125}}}
	for _, c := range []struct {
		at    time.Duration
		after bool
	}{{90 * time.Second, false}, {90012500 * time.Microsecond, false}, {90013 * time.Millisecond, true}} {
		after, last := tr.AfterEnd(c.at)
		if after != c.after || last != 90012*time.Millisecond {
			t.Errorf("AfterEnd(%s) = %v, %s; want %v, 1m30.012s", c.at, after, last, c.after)
		}
	}
}

// loadSource loads s with a status that keeps nothing.
func loadSource(t *testing.T, s Source) *Trace {
	t.Helper()
	tr, _, err := s.Load(context.Background(), discard{})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestSourceLoad reads each kind of source from testdata written for it:
//
//   - same_prompt.jsonl, Mooncake: four requests of hash_ids 1,2,3 (1100 tokens), one a
//     second: 512-token blocks, the same three keys each, arrivals 0..3 s.
//   - lengths.csv, Azure: two requests 2.5 s apart, 374 and 40 prompt tokens, no prefix
//     information: in 16-token blocks 24 (ceil(374/16)) and 3 keys, none shared.
//   - requests.jsonl, a request log: three chat requests 2 and 3 s apart with max_tokens 64,
//     65, 66, tokens estimated, and the same system prompt opening each.
//   - events' testdata/run a.kvtap and b.kvtap, tap recordings: five stored blocks of 16 tokens,
//     each stored alone, replayed as prefills; a lower bound.
func TestSourceLoad(t *testing.T) {
	tr := loadSource(t, Source{Trace: "testdata/source/same_prompt.jsonl", Format: FormatAuto})
	if tr.Format != "mooncake" || tr.BlockSize != MooncakeBlockSize || len(tr.Requests) != 4 || !tr.PrefixInfo {
		t.Fatalf("mooncake: format %s, block size %d, %d requests, prefix info %v", tr.Format, tr.BlockSize, len(tr.Requests), tr.PrefixInfo)
	}
	for i, r := range tr.Requests {
		if r.Arrival != float64(i) || r.InputTokens != 1100 || r.OutputTokens != 10 || len(r.Blocks) != 3 || !slices.Equal(r.Blocks, tr.Requests[0].Blocks) {
			t.Errorf("mooncake request %d: %+v; want arrival %d s, 1100 tokens in the first request's 3 blocks", i, r, i)
		}
	}

	tr = loadSource(t, Source{Trace: "testdata/source/lengths.csv"})
	if tr.Format != "azure" || tr.BlockSize != AzureBlockSize || tr.PrefixInfo || len(tr.Requests) != 2 {
		t.Fatalf("azure: format %s, block size %d, prefix info %v, %d requests", tr.Format, tr.BlockSize, tr.PrefixInfo, len(tr.Requests))
	}
	a, b := tr.Requests[0], tr.Requests[1]
	if a.InputTokens != 374 || b.InputTokens != 40 || len(a.Blocks) != 24 || len(b.Blocks) != 3 || b.Arrival-a.Arrival != 2.5 || a.Blocks[0] == b.Blocks[0] {
		t.Errorf("azure requests %+v %+v; want 374 and 40 tokens in 24 and 3 unshared blocks, 2.5 s apart", a, b)
	}

	tr = loadSource(t, Source{Requests: "testdata/source/requests.jsonl", OutputTokens: DefaultOutputTokens,
		RequestLog: RequestLogOptions{MaxLine: 1 << 20, Rate: DefaultRate, Concurrency: 1}})
	if tr.Format != "requests" || tr.Tokens != "estimated" || len(tr.Requests) != 3 {
		t.Fatalf("request log: format %s, tokens %s, %d requests", tr.Format, tr.Tokens, len(tr.Requests))
	}
	for i, want := range []struct {
		arrival float64
		out     int
	}{{0, 64}, {2, 65}, {5, 66}} {
		r := tr.Requests[i]
		if r.Arrival != want.arrival || r.OutputTokens != want.out || r.Blocks[0] != tr.Requests[0].Blocks[0] {
			t.Errorf("request %d: arrival %v, output %d; want %v, %d and the first block shared", i, r.Arrival, r.OutputTokens, want.arrival, want.out)
		}
	}

	tr = loadSource(t, Source{Recordings: []string{"../events/testdata/run/a.kvtap", "../events/testdata/run/b.kvtap"}, OutputTokens: 7})
	blocks := 0
	for _, r := range tr.Requests {
		blocks += len(r.Blocks)
		if r.OutputTokens != 7 {
			t.Errorf("recording request %+v: want the output tokens given (7)", r)
		}
	}
	if tr.Format != "recording" || !tr.LowerBound || tr.BlockSize != 16 || blocks != 5 {
		t.Errorf("recordings: format %s, lower bound %v, block size %d, %d blocks; want recording, true, 16, 5", tr.Format, tr.LowerBound, tr.BlockSize, blocks)
	}
}

// TestSourceLoadStdin reads the request log from Stdin for "-".
func TestSourceLoadStdin(t *testing.T) {
	data, err := os.ReadFile("testdata/source/requests.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	tr := loadSource(t, Source{Requests: "-", Stdin: bytes.NewReader(data), OutputTokens: DefaultOutputTokens,
		RequestLog: RequestLogOptions{MaxLine: 1 << 20, Rate: DefaultRate, Concurrency: 1}})
	if len(tr.Requests) != 3 {
		t.Errorf("%d requests from standard input, want 3", len(tr.Requests))
	}
}

// TestSourceLoadErrors: a format the rule cannot tell is a *FormatError; a missing file is an
// error naming it; a trace past MaxRefs is refused.
func TestSourceLoadErrors(t *testing.T) {
	var fe *FormatError
	if _, _, err := (Source{Trace: "testdata/source/trace.txt"}).Load(context.Background(), discard{}); !errors.As(err, &fe) {
		t.Errorf("a .txt trace: %v, want a *FormatError", err)
	}
	if _, _, err := (Source{Trace: "testdata/source/absent.jsonl"}).Load(context.Background(), discard{}); err == nil || !strings.Contains(err.Error(), "absent.jsonl") {
		t.Errorf("a missing trace: %v, want an error naming it", err)
	}
	// same_prompt.jsonl holds 12 block references.
	if _, _, err := (Source{Trace: "testdata/source/same_prompt.jsonl", MaxRefs: 11}).Load(context.Background(), discard{}); err == nil || !strings.Contains(err.Error(), "--max-block-refs") {
		t.Errorf("12 references with a bound of 11: %v, want the bound named", err)
	}
	if _, _, err := (Source{Trace: "testdata/source/same_prompt.jsonl", MaxRefs: 12}).Load(context.Background(), discard{}); err != nil {
		t.Errorf("12 references with a bound of 12: %v", err)
	}
}

// TestSourceLoadCorpus reads the shared corpus's traces: the Mooncake FAST'25 conversation
// trace has 12,031 lines, the Azure 2023 conversation trace a header and 19,366 rows (counted
// in the file: MANIFEST.tsv says 19,365, but the file's last row has no newline, which a line
// count misses).
func TestSourceLoadCorpus(t *testing.T) {
	dir := os.Getenv("KVCHECK_CORPUS")
	if dir == "" {
		t.Skip("KVCHECK_CORPUS not set")
	}
	for _, c := range []struct {
		file     string
		requests int
	}{{"mooncake_conversation_trace.jsonl", 12031}, {"azure_llm_inference_trace_2023_conv.csv", 19366}} {
		tr := loadSource(t, Source{Trace: filepath.Join(dir, "traces", c.file)})
		if len(tr.Requests) != c.requests {
			t.Errorf("%s: %d requests, want %d", c.file, len(tr.Requests), c.requests)
		}
	}
}

// TestRunReportCannotRun: an emulation that cannot run leaves no row and one cannot-run finding
// (info) per policy whatever the number of fleets, and the others run. Three stand-ins: one
// that runs on any trace (least-loaded's rule), one that reads the text (kv-longest's rule) and
// one that also refuses its settings. On a trace of block hashes both text readers cannot run
// for lack of text (the text is checked before the settings); on a text trace of three
// identical prompts (3 blocks each, 2 replicas) the text reader runs and sends r2 and r3 where
// r1 went, each hitting 2 blocks (the last prompt token is always recomputed, so the last full
// block is not a hit), 4 in all against round-robin's 2 (r3 on r1's replica), while the one
// refusing its settings still cannot run. Run alone keeps failing with the error.
func TestRunReportCannotRun(t *testing.T) {
	runs, reads, refuses := leastLoadedInfo, kvLongestInfo, kvLongestInfo
	runs.Name = "runs-anywhere"
	reads.Name, reads.NeedsText = "reads-text", true
	refuses.Name, refuses.NeedsText = "refuses-settings", true
	refuses.Check = func(_ Config, t *Trace) error {
		return &CannotRunError{Policy: "refuses-settings", Trace: t.Name, Reason: "the router refuses to start without a session key"}
	}
	sweep := Sweep{Replicas: []int{1, 2}, KVBlocks: []int{64}, Emulations: []PolicyInfo{runs, refuses, reads},
		Policies: []string{"round-robin", "runs-anywhere", "refuses-settings", "reads-text"}, Base: tinyConfig(1)}
	hashes := tinyTrace(req(0, "", 100, 1, 2, 3), req(1, "", 100, 1, 2, 3), req(2, "", 100, 1, 2, 3))
	rep, err := RunReport(context.Background(), hashes, sweep, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Fleets {
		var got []string
		for _, r := range f.Results {
			got = append(got, r.Policy)
		}
		if want := []string{"round-robin", "runs-anywhere"}; !slices.Equal(got, want) {
			t.Errorf("%d replicas: rows %q, want %q", f.Replicas, got, want)
		}
	}
	var codes []string
	for _, f := range rep.Findings {
		if f.Code != "cannot-run" {
			continue
		}
		codes = append(codes, f.Code+" "+f.Severity.String()+" "+f.Subject)
		if !strings.Contains(f.Message, "cannot run on tiny: it routes on the request's text and headers, and this test trace holds only block hashes; give the request log (--requests) instead") {
			t.Errorf("cannot-run message %q does not say why", f.Message)
		}
	}
	if want := []string{"cannot-run info refuses-settings", "cannot-run info reads-text"}; !slices.Equal(codes, want) {
		t.Errorf("findings %q, want %q", codes, want)
	}
	var ce *CannotRunError
	if _, err := Run(context.Background(), hashes, sweep, nil); !errors.As(err, &ce) || ce.Policy != "refuses-settings" {
		t.Errorf("Run = %v, want refuses-settings's *CannotRunError", err)
	}

	text := textTrace(tinyBlock, textReq(0, 100, "same prompt", tinyBlock, 1, 2, 3),
		textReq(1, 100, "same prompt", tinyBlock, 1, 2, 3), textReq(2, 100, "same prompt", tinyBlock, 1, 2, 3))
	sweep.Replicas = []int{2}
	rep, err = RunReport(context.Background(), text, sweep, nil)
	if err != nil {
		t.Fatal(err)
	}
	hits := map[string]int64{}
	for _, r := range rep.Fleets[0].Results {
		hits[r.Policy] = r.HitBlocks
	}
	if want := map[string]int64{"round-robin": 2, "runs-anywhere": hits["runs-anywhere"], "reads-text": 4}; !maps.Equal(hits, want) {
		t.Errorf("hit blocks %v, want %v", hits, want)
	}
	if f := rep.Findings[0]; f.Code != "cannot-run" || f.Subject != "refuses-settings" || !strings.Contains(f.Message, "refuses to start without a session key") ||
		slices.ContainsFunc(rep.Findings[1:], func(f finding.Finding) bool { return f.Code == "cannot-run" }) {
		t.Errorf("findings %+v, want refuses-settings's missing session key alone", rep.Findings)
	}
}
