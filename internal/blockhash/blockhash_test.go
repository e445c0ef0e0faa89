package blockhash

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func mustHex(t *testing.T, s string) Digest {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 32 {
		t.Fatalf("bad hex %q", s)
	}
	return Digest(b)
}

func seq(from, to int64) []int64 {
	var out []int64
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// TestVectors checks the sha256_cbor vectors of SPEC §2.4.
func TestVectors(t *testing.T) {
	none := NoneHash("0")
	if want := mustHex(t, "4e1195df020de59e0d65a33a4279f1183e7ae4e5d980e309f8b55adff2e61c3e"); none != want {
		t.Fatalf("NoneHash(\"0\") = %x, want %x", none, want)
	}
	tests := []struct {
		name   string
		parent Digest
		tokens []int64
		extra  []any
		digest string
		wire   uint64
	}{
		{"block0", none, seq(1, 16), nil, "202da172482d928bbc42ab25b0151e2b895f13f41002e27b2ceabcfae6d332ea", 3236607068019569386},
		{"block1", mustHex(t, "202da172482d928bbc42ab25b0151e2b895f13f41002e27b2ceabcfae6d332ea"), seq(17, 32), nil, "4a0a393805c6d2f0ed831000d41bb65980336c4c04895d5e26470bbec927f5bf", 2758186210834249151},
		{"block0-extra", none, seq(1, 16), []any{"my-lora", "salt-1"}, "fa8e3c82edaa7a102d2f28953ac99ee07991bc597f8239e826f909613a7a9518", 2808286155839804696},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Block(tt.parent, tt.tokens, tt.extra)
			if err != nil {
				t.Fatal(err)
			}
			if want := mustHex(t, tt.digest); got != want {
				t.Errorf("digest = %x, want %x", got, want)
			}
			if got.Wire() != tt.wire {
				t.Errorf("wire = %d, want %d", got.Wire(), tt.wire)
			}
		})
	}
	chain, err := Chain(none, seq(1, 40), 16, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(chain) != 2 || chain[1].Wire() != 2758186210834249151 {
		t.Errorf("Chain gave %d blocks, second wire %d; want 2 blocks, 2758186210834249151", len(chain), chain[1].Wire())
	}
}

// TestCorpusEvent recomputes the 25 block hashes of a BlockStored event captured from vLLM.
func TestCorpusEvent(t *testing.T) {
	dir := os.Getenv("KVCHECK_CORPUS")
	if dir == "" {
		t.Skip("KVCHECK_CORPUS is not set")
	}
	raw, err := os.ReadFile(filepath.Join(dir, "events", "llmd-kvcache_kv_event_base.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ev struct {
		BlockHashes []uint64 `json:"block_hashes"`
		TokenIDs    []int64  `json:"token_ids"`
		BlockSize   int      `json:"block_size"`
		HashSeed    string   `json:"hash_seed"`
	}
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	chain, err := Chain(NoneHash(ev.HashSeed), ev.TokenIDs, ev.BlockSize, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(chain) != len(ev.BlockHashes) || len(chain) != 25 {
		t.Fatalf("got %d blocks, event has %d, want 25", len(chain), len(ev.BlockHashes))
	}
	for i, d := range chain {
		if d.Wire() != ev.BlockHashes[i] {
			t.Errorf("block %d: wire %d, want %d", i, d.Wire(), ev.BlockHashes[i])
		}
	}
}

func TestAppendKey(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"nil", nil, "f6"},
		{"small", 5, "05"},
		{"neg", -1, "20"},
		{"u8", 200, "18c8"},
		{"u16", 1000, "1903e8"},
		{"text", "a", "6161"},
		{"bytes", []byte{1, 2}, "420102"},
		{"tuple", []any{"img", 16}, "8263696d6710"},
		{"half", 1.5, "f93e00"},
		{"single", 100000.0, "fa47c35000"},
		{"double", 1.1, "fb3ff199999999999a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := AppendKey(nil, tt.v)
			if err != nil {
				t.Fatal(err)
			}
			if hex.EncodeToString(got) != tt.want {
				t.Errorf("AppendKey(%v) = %x, want %s", tt.v, got, tt.want)
			}
		})
	}
	if _, err := AppendKey(nil, struct{}{}); err == nil {
		t.Error("AppendKey(struct{}{}) gave no error")
	}
}

func BenchmarkChain(b *testing.B) {
	tokens := seq(1, 1024)
	none := NoneHash("0")
	b.ReportAllocs()
	b.SetBytes(int64(len(tokens) * 4))
	for b.Loop() {
		if _, err := Chain(none, tokens, 16, nil); err != nil {
			b.Fatal(err)
		}
	}
}
