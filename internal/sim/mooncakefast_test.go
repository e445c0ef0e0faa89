package sim

import (
	"bufio"
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// checkFastAgrees fails when the fast path accepts a line that encoding/json decodes
// differently, rejects, or finds unknown fields in.
func checkFastAgrees(t *testing.T, line []byte) (fast bool) {
	t.Helper()
	row, _, ok := parseMooncakeFast(line, nil)
	if !ok {
		return false
	}
	want, extra, err := decodeMooncakeRow(line)
	if err != nil {
		t.Fatalf("fast path accepted %q, encoding/json says %v", line, err)
	}
	if len(extra) > 0 {
		t.Fatalf("fast path accepted %q with unknown fields %v", line, extra)
	}
	if d := cmp.Diff(want, row); d != "" {
		t.Fatalf("fast path on %q (-encoding/json +fast):\n%s", line, d)
	}
	return true
}

// TestMooncakeFastPath checks lines worked out by hand: the shapes the fast path takes, and the
// ones it must leave to encoding/json (which rejects them, or reads them another way).
func TestMooncakeFastPath(t *testing.T) {
	fast := []string{
		`{"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": [0, 1, 2]}`,
		`{"timestamp":27.5,"input_length":1,"output_length":0,"hash_ids":[]}`,
		`{"timestamp": 1e3, "input_length": 1, "hash_ids": [18446744073709551615, -1], "session_id": "s 1"}`,
		`{"hash_ids": [7], "chat_id": 42, "input_length": 3, "timestamp": -0.5E-2}`,
		`{}`,
	}
	slow := []string{
		`{"timestamp": 0, "input_length": 1, "hash_ids": [1], "extra": true}`,  // unknown field: noted
		`{"Timestamp": 0, "input_length": 1, "hash_ids": [1]}`,                 // encoding/json matches names case-insensitively
		`{"timestamp": 0, "timestamp": 1, "input_length": 1, "hash_ids": [1]}`, // repeated: the last wins
		`{"timestamp": null, "input_length": 1, "hash_ids": [1]}`,
		`{"timestamp": 0, "input_length": 1.0, "hash_ids": [1]}`, // not an int
		`{"timestamp": 0, "input_length": 1, "hash_ids": [01]}`,  // not JSON
		`{"timestamp": 0, "input_length": 1, "hash_ids": [1,]}`,
		`{"timestamp": 0, "input_length": 1, "hash_ids": [1.5]}`,
		`{"timestamp": 0, "input_length": 1, "hash_ids": [1], "session_id": "a\"b"}`,
		`{"timestamp": 0, "input_length": 1, "hash_ids": [1], "session_id": "é"}`,
		`{"timestamp": 0, "input_length": 99999999999999999999, "hash_ids": [1]}`,
		`{"timestamp": 0, "input_length": 1, "hash_ids": [1]} {}`,
		`{"timestamp": 0 "input_length": 1}`,
		`{"timestamp": 0, }`,
		`[1]`,
	}
	for _, l := range fast {
		if !checkFastAgrees(t, []byte(l)) {
			t.Errorf("fast path refused %s", l)
		}
	}
	for _, l := range slow {
		if checkFastAgrees(t, []byte(l)) {
			t.Errorf("fast path took %s, which is encoding/json's to read", l)
		}
	}
}

// TestMooncakeFastPathCorpus checks every line of the corpus trace takes the fast path and
// decodes exactly as encoding/json decodes it.
func TestMooncakeFastPathCorpus(t *testing.T) {
	sc := bufio.NewScanner(corpusTrace(t, "mooncake_conversation_trace.jsonl"))
	sc.Buffer(nil, maxLine)
	n := 0
	for sc.Scan() {
		if !checkFastAgrees(t, bytes.TrimSpace(sc.Bytes())) {
			t.Fatalf("line %d left the fast path: %s", n+1, sc.Bytes())
		}
		n++
	}
	if n != 12031 {
		t.Errorf("%d lines, want 12031", n)
	}
}

// FuzzMooncakeFastPath: whatever the line, the fast path either declines it or agrees with
// encoding/json.
func FuzzMooncakeFastPath(f *testing.F) {
	f.Add([]byte(`{"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [0, 1]}`))
	f.Add([]byte(`{"timestamp":1.5e2,"input_length":1,"hash_ids":[-9223372036854775808],"session_id":"x","chat_id":3}`))
	f.Add([]byte(`{"hash_ids": [], "input_length": 0}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		checkFastAgrees(t, bytes.TrimSpace(b))
	})
}
