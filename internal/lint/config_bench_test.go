package lint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kvcheck/kvcheck/internal/router/dynamo"
	"github.com/kvcheck/kvcheck/internal/router/litellm"
	"github.com/kvcheck/kvcheck/internal/router/llmd"
	"github.com/kvcheck/kvcheck/internal/router/prodstack"
)

// benchConfigFiles is the size of the generated configuration repository.
const benchConfigFiles = 3000

// writeConfigRepo writes n router and engine config files, cycling through the kinds lint
// detects (LiteLLM, EndpointPickerConfig in Helm values, production-stack values, vLLM
// Deployments, Dynamo graphs, compose files), each a little different, and returns their total
// size.
func writeConfigRepo(tb testing.TB, dir string, n int) int64 {
	tb.Helper()
	events := `{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:5556","topic":"kv@$(POD_IP):8000@Qwen/Qwen3-32B"}`
	var total int64
	for i := 0; i < n; i++ {
		var src string
		switch i % 6 {
		case 0:
			src = litellmShuffle + fmt.Sprintf("  num_retries: %d\n  timeout: %d\n", i%3, 30+i)
		case 1:
			src = "router:\n  epp:\n    replicas: 1\n    pluginsCustomConfig:\n      p.yaml: |\n" + indent(eppPrecise, "        ")
		case 2:
			src = prodStack("prefixaware", fmt.Sprintf("    vllmConfig:\n      enablePrefixCaching: true\n      maxModelLen: %d\n", 4096+i), "  replicaCount: 1\n")
		case 3:
			src = engineDeployment("vllm/vllm-openai:v0.26.0", 1+i%4, events, "--block-size", "64", "--port", "8000")
		case 4:
			src = dynamoDGD("kv", "", events)
		case 5:
			src = fmt.Sprintf("services:\n  vllm:\n    image: vllm/vllm-openai:v0.26.0\n    environment:\n      PYTHONHASHSEED: \"0\"\n    command: >\n      --model Qwen/Qwen3-32B\n      --port %d\n      --kv-events-config '%s'\n", 8000+i, events)
		}
		p := filepath.Join(dir, fmt.Sprintf("d%02d", i%50), fmt.Sprintf("f%04d.yaml", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			tb.Fatal(err)
		}
		total += int64(len(src))
	}
	return total
}

// cpuNow is the CPU time this process has used, user and system.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func indent(s, pre string) string {
	var b bytes.Buffer
	for _, l := range bytes.SplitAfter([]byte(s), []byte("\n")) {
		if len(l) > 0 {
			b.WriteString(pre)
			b.Write(l)
		}
	}
	return b.String()
}

// BenchmarkLintConfigRepo lints a generated repository of 3,000 router and engine config files
// per iteration, every check and the checks across files included, and the same at 12,000
// files: with the checks across files linear, files/s stays flat between the two.
func BenchmarkLintConfigRepo(b *testing.B) {
	for _, n := range []int{benchConfigFiles, 4 * benchConfigFiles} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			size := writeConfigRepo(b, dir, n)
			l := newLinter(b, "")
			l.rewrite = false // as kvcheck lint runs without --fix or --diff
			b.SetBytes(size)
			b.ReportAllocs()
			cpu0 := cpuNow()
			for b.Loop() {
				rs, err := l.Paths(context.Background(), []string{dir})
				if err != nil || len(rs) != n {
					b.Fatalf("linted %d files: %v", len(rs), err)
				}
			}
			// Files per CPU second as well: on a shared machine the wall clock also counts the
			// time spent waiting for a core.
			cpu := cpuNow() - cpu0
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "files/s")
			b.ReportMetric(float64(n)*float64(b.N)/cpu.Seconds(), "files/cpu-s")
		})
	}
}

// BenchmarkReferenceYAMLDecode is the reference for BenchmarkLintConfigRepo: walking the same
// files and decoding every document with the YAML library (gopkg.in/yaml.v3) into interface
// values, the least any tool that reads these files must do.
func BenchmarkReferenceYAMLDecode(b *testing.B) {
	dir := b.TempDir()
	size := writeConfigRepo(b, dir, benchConfigFiles)
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			dec := yaml.NewDecoder(bytes.NewReader(data))
			for {
				var v any
				if err := dec.Decode(&v); errors.Is(err, io.EOF) {
					break
				} else if err != nil {
					return err
				}
			}
			n++
			return nil
		})
		if err != nil || n != benchConfigFiles {
			b.Fatalf("decoded %d files: %v", n, err)
		}
	}
	b.ReportMetric(float64(benchConfigFiles)*float64(b.N)/b.Elapsed().Seconds(), "files/s")
}

// TestGeneratedConfigRepo keeps the benchmark honest: its files are detected as the kinds they
// were written as and produce the findings worked out for them.
func TestGeneratedConfigRepo(t *testing.T) {
	dir := t.TempDir()
	writeConfigRepo(t, dir, 6)
	rs, err := newLinter(t, "").Paths(context.Background(), []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	formats := map[Format]int{}
	for _, r := range rs {
		for _, f := range r.Formats {
			formats[f]++
		}
	}
	for _, f := range []Format{Format(litellm.FormatConfig), Format(llmd.FormatValues), Format(prodstack.FormatValues), FormatWorkload, Format(dynamo.FormatGraph), FormatCompose} {
		if formats[f] != 1 {
			t.Errorf("format %s detected %d times, want 1 (all: %v)", f, formats[f], formats)
		}
	}
	var all []string
	for _, r := range rs {
		for _, f := range r.Findings {
			all = append(all, f.Code)
		}
	}
	// The LiteLLM file shuffles two deployments (LL-01). The engines publish on the port the
	// EPP dials with its topic prefix, their seeds are set or the EPP recomputes hashes, and the
	// production-stack model caches prefixes: nothing else.
	want := map[string]bool{"litellm/no-affinity": true}
	for _, c := range all {
		if !want[c] {
			t.Errorf("unexpected finding %s", c)
		}
	}
	if len(all) != 1 {
		t.Errorf("findings %v, want one litellm/no-affinity", all)
	}
}
