//go:build unix

package files

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// benchTree writes n files of about 14 KB (a dashboard's median size) in 16 directories.
func benchTree(b *testing.B, n int) []string {
	b.Helper()
	dir := b.TempDir()
	text := []byte(strings.Repeat(`{"expr": "rate(vllm:prompt_tokens_total[5m])"},`+"\n", 300))
	var paths []string
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("d%02d", i%16), fmt.Sprintf("f%05d.json", i))
		if i < 16 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(p, text, 0o644); err != nil {
			b.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// BenchmarkReadFiles reads files as lint's workers do (ReadFound, into a worker's buffer) and
// as package os does (os.Stat, then os.ReadFile), one file an op, on as many goroutines as
// -cpu gives: `go test -run '^$' -bench ReadFiles -cpu 1,2 ./internal/files` shows how the
// system calls of reading a file scale over the cores (BENCHMARKS.md, issue 28). "sum" hashes a
// file's text already read, no system call and no allocation: how work that is only CPU
// scales on the same cores.
func BenchmarkReadFiles(b *testing.B) {
	paths := benchTree(b, 2000)
	text, err := os.ReadFile(paths[0])
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		read func(p string, buf []byte) ([]byte, error)
	}{
		{"ReadFound", func(p string, buf []byte) ([]byte, error) { return ReadFound(p, 1<<24, buf) }},
		{"sum", func(p string, buf []byte) ([]byte, error) {
			s := sha256.Sum256(text)
			return append(buf, s[:]...), nil
		}},
		{"os", func(p string, _ []byte) ([]byte, error) {
			if _, err := os.Stat(p); err != nil {
				return nil, err
			}
			return os.ReadFile(p)
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var next atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				var buf []byte
				for pb.Next() {
					got, err := c.read(paths[next.Add(1)%int64(len(paths))], buf)
					if err != nil || len(got) == 0 {
						b.Error(len(got), err)
						return
					}
					buf = got[:0]
				}
			})
		})
	}
}
