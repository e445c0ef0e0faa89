//go:build unix

package lint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/catalog"
)

// removedRule is a rule file with one error: a metric vLLM removed.
const removedRule = "groups:\n- name: g\n  rules:\n  - alert: a\n    expr: vllm:gpu_cache_usage_perc > 0.9\n"

func mkfile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mklink(t *testing.T, target, path string) {
	t.Helper()
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

// TestReadInputs: what a run reads, and what it says of what it did not (issue 23 item 1:
// each of these passed with "no findings in 0 files", or skipped without a word).
func TestReadInputs(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string)
		roots []string
		// findings as "path severity code" (path relative to the test's directory), and
		// skipped as "path: what"
		want, skipped []string
	}{{
		name: "directory named through a link",
		setup: func(t *testing.T, dir string) {
			mkfile(t, dir+"/real/rules.yaml", removedRule)
			mklink(t, "real", dir+"/rules")
		},
		roots: []string{"rules"},
		want:  []string{"rules/rules.yaml error metric-removed"},
	}, {
		// The kubelet's layout of a ConfigMap volume: one finding, under the visible name.
		name: "configmap mount",
		setup: func(t *testing.T, dir string) {
			mkfile(t, dir+"/etc/rules/..2026_11_01_00_00_00.1/rules.yaml", removedRule)
			mklink(t, "..2026_11_01_00_00_00.1", dir+"/etc/rules/..data")
			mklink(t, "..data/rules.yaml", dir+"/etc/rules/rules.yaml")
		},
		roots:   []string{"etc/rules"},
		want:    []string{"etc/rules/rules.yaml error metric-removed"},
		skipped: []string{"etc/rules/..2026_11_01_00_00_00.1: hidden directories", "etc/rules/..data: hidden directories"},
	}, {
		// A linked directory inside the tree is followed; a second name of a file is read once.
		name: "links in the tree",
		setup: func(t *testing.T, dir string) {
			mkfile(t, dir+"/shared/rules.yaml", removedRule)
			mkfile(t, dir+"/repo/a.yaml", removedRule)
			mklink(t, "../shared", dir+"/repo/shared")
			mklink(t, "a.yaml", dir+"/repo/b.yaml")
		},
		roots:   []string{"repo"},
		want:    []string{"repo/a.yaml error metric-removed", "repo/shared/rules.yaml error metric-removed"},
		skipped: []string{"repo/b.yaml: second names of files already read"},
	}, {
		name: "loop and broken link",
		setup: func(t *testing.T, dir string) {
			mkfile(t, dir+"/repo/a.yaml", removedRule)
			mklink(t, ".", dir+"/repo/up")
			mklink(t, "gone.yaml", dir+"/repo/gone.yaml.link")
		},
		roots: []string{"repo"},
		want:  []string{"repo/a.yaml error metric-removed", "repo/gone.yaml.link warning file-skipped", "repo/up warning file-skipped"},
	}, {
		// A pipe in a tree is never opened: that blocked until a writer came.
		name: "fifo in the tree",
		setup: func(t *testing.T, dir string) {
			mkfile(t, dir+"/repo/a.yaml", removedRule)
			if err := syscall.Mkfifo(dir+"/repo/p", 0o644); err != nil {
				t.Fatal(err)
			}
		},
		roots: []string{"repo"},
		want:  []string{"repo/a.yaml error metric-removed", "repo/p warning file-skipped"},
	}, {
		name:  "device named",
		setup: func(t *testing.T, dir string) { mklink(t, "/dev/null", dir+"/null") },
		roots: []string{"null"},
		want:  []string{"null error file-skipped"},
	}, {
		// A file of no known format beside one that is checked: a warning on it (it was named).
		name: "named file of nothing known",
		setup: func(t *testing.T, dir string) {
			mkfile(t, dir+"/app.json", `{"name": "checkout", "port": 8080}`)
			mkfile(t, dir+"/rules.yaml", removedRule)
		},
		roots: []string{"app.json", "rules.yaml"},
		want:  []string{"app.json warning file-skipped", "rules.yaml error metric-removed"},
	}, {
		// Alone, it is an error: the run checked nothing.
		name:  "nothing but a file of nothing known",
		setup: func(t *testing.T, dir string) { mkfile(t, dir+"/app.json", `{"name": "checkout"}`) },
		roots: []string{"app.json"},
		want:  []string{"app.json error file-skipped"},
	}, {
		// Found in a directory, such files are counted; a directory of only them, or none,
		// is a run that checked nothing.
		name: "tree of nothing known",
		setup: func(t *testing.T, dir string) {
			mkfile(t, dir+"/repo/README.md", "# checkout service\n")
			mkfile(t, dir+"/repo/logo.png", "\x89PNG\x00\x00")
			mkfile(t, dir+"/repo/.git/HEAD", "ref: main\n")
		},
		roots:   []string{"repo"},
		want:    []string{"repo error file-skipped"},
		skipped: []string{"repo/.git: hidden directories", "repo/README.md: files holding nothing kvcheck checks", "repo/logo.png: binary files"},
	}, {
		name:  "empty directory",
		setup: func(t *testing.T, dir string) { mkfile(t, dir+"/repo/.keep/x", "") },
		roots: []string{"repo"},
		want:  []string{"repo error file-skipped"},
		skipped: []string{
			"repo/.keep: hidden directories",
		},
	}, {
		// --fix's temporary file left by a killed run is neither read nor reported as an
		// error; it is counted.
		name: "fix temporary file",
		setup: func(t *testing.T, dir string) {
			mkfile(t, dir+"/repo/rules.yaml", removedRule)
			mkfile(t, dir+"/repo/"+fixTempPrefix+"123-456", removedRule)
		},
		roots:   []string{"repo"},
		want:    []string{"repo/rules.yaml error metric-removed"},
		skipped: []string{"repo/" + fixTempPrefix + "123-456: temporary files of an interrupted --fix"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.setup(t, dir)
			var roots []string
			for _, r := range tc.roots {
				roots = append(roots, filepath.Join(dir, r))
			}
			in, err := newLinter(t, "").Read(context.Background(), roots)
			if err != nil {
				t.Fatal(err)
			}
			rel := func(p string) string { return strings.TrimPrefix(p, dir+"/") }
			var got, skipped []string
			for _, r := range in.Files {
				for _, f := range r.Findings {
					got = append(got, rel(f.File)+" "+f.Severity.String()+" "+f.Code)
				}
			}
			for _, s := range in.Skipped {
				skipped = append(skipped, rel(s.Path)+": "+s.What)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.skipped, skipped); diff != "" {
				t.Errorf("skipped (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReadNamedPipe: a pipe named on the command line is read (a process substitution is one),
// and an interrupt ends a read no writer ever serves (it blocked in open and ignored SIGTERM).
func TestReadNamedPipe(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "rules.yaml")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	go func() {
		if f, err := os.OpenFile(p, os.O_WRONLY, 0); err == nil {
			_, _ = f.WriteString(removedRule)
			_ = f.Close()
		}
	}()
	rs, err := newLinter(t, "").Paths(context.Background(), []string{p})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || len(rs[0].Findings) != 1 || rs[0].Findings[0].Code != CodeRemoved {
		t.Fatalf("results %+v, want the removed metric", rs)
	}

	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("SIGTERM")
	done := make(chan error, 1)
	var got []FileResult
	go func() {
		var err error
		got, err = newLinter(t, "").Paths(ctx, []string{p})
		done <- err
	}()
	cancel(stop)
	if err := <-done; !errors.Is(err, stop) {
		t.Fatalf("err %v, want the interrupt", err)
	}
	if len(got) != 1 || !strings.Contains(got[0].Findings[0].Message, "interrupted") {
		t.Errorf("results %+v, want the pipe marked as interrupted", got)
	}
}

// TestReadPipesInAnyOrder: two pipes named on the command line, filled by one writer in the
// other order (b, then a), are both read with two jobs: each pipe is a batch of its own, so
// while one worker waits on a, the other reads b. When they shared a batch, one worker read a
// and waited for ever, b's writer never served (the review of 89ac76b).
func TestReadPipesInAnyOrder(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	for _, p := range []string{a, b} {
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	go func() {
		for _, p := range []string{b, a} {
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				return
			}
			_, _ = f.WriteString(removedRule)
			_ = f.Close()
		}
	}()
	// The deadline only ends a run that hangs, so that the test fails rather than waits.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	rs, err := New(cat, Options{Jobs: 2}).Paths(ctx, []string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Path != a || rs[1].Path != b || len(rs[0].Findings) != 1 || len(rs[1].Findings) != 1 {
		t.Errorf("results %+v, want a's and b's removed metric, in that order", rs)
	}
}

// TestYAMLDocumentLimit: a stream of exactly the limit is read whole; one document more is
// refused with an error naming the limit (it was cut at 10,000, so a removed metric in the
// 10,001st document passed).
func TestYAMLDocumentLimit(t *testing.T) {
	filler := strings.Repeat("a: 1\n---\n", maxYAMLDocs-1)
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"at the limit", filler + removedRule, []string{"error metric-removed"}},
		{"one past", filler + "a: 1\n---\n" + removedRule, []string{"error file-skipped"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newLinter(t, "").File("big.yaml", []byte(tc.src))
			var got []string
			for _, f := range r.Findings {
				got = append(got, f.Severity.String()+" "+f.Code)
				if f.Code == CodeSkipped && !strings.Contains(f.Message, "more than 10000 YAML documents") {
					t.Errorf("message %q does not name the limit", f.Message)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReadKeepsTextOnlyWhenAsked: a run keeps each file's text only for --diff and --fix
// (Rewrite) or a caller that reads it again (KeepText); otherwise a file's text is dropped once
// it is linted, and its inline directives still silence the findings the checks across files
// add after every file was read.
func TestReadKeepsTextOnlyWhenAsked(t *testing.T) {
	dir := t.TempDir()
	// The line above the finding silences it; the second file has a finding of its own.
	mkfile(t, dir+"/a.yaml", "groups:\n- name: g\n  rules:\n  - alert: a\n    # kvcheck:ignore metric-removed migrating next week\n    expr: vllm:gpu_cache_usage_perc > 0.9\n")
	mkfile(t, dir+"/b.yaml", removedRule)
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		opts Options
		keep bool
	}{{Options{Jobs: 2}, false}, {Options{Jobs: 2, Rewrite: true}, true}, {Options{Jobs: 1, KeepText: true}, true}} {
		rs, err := New(cat, tc.opts).Paths(context.Background(), []string{dir})
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) != 2 {
			t.Fatalf("%+v: %d results, want 2", tc.opts, len(rs))
		}
		for _, r := range rs {
			if (r.Original != nil) != tc.keep {
				t.Errorf("%+v: %s: text kept %v, want %v", tc.opts, r.Path, r.Original != nil, tc.keep)
			}
		}
		if len(rs[0].Findings) != 0 || len(rs[0].Suppressed) != 1 || len(rs[1].Findings) != 1 {
			t.Errorf("%+v: a.yaml %d findings, %d suppressed; b.yaml %d findings; want 0, 1, 1", tc.opts, len(rs[0].Findings), len(rs[0].Suppressed), len(rs[1].Findings))
		}
	}
}

// TestReadHoldsNoText: the results of a run without --diff or --fix hold no file's text. Each
// of 40 dashboards of 256 KB has findings whose names, places and messages come from its
// text; if one of them were a substring of the file (or a site, or the file's parse, were
// kept), the heap after the run would hold the 10 MB of text. It holds the findings: a few KB
// a file.
func TestReadHoldsNoText(t *testing.T) {
	dir := t.TempDir()
	pad := strings.Repeat("x", 256<<10)
	for i := range 40 {
		mkfile(t, filepath.Join(dir, fmt.Sprintf("d%02d.json", i)), fmt.Sprintf(`{"title": "d%d", "description": %q, "panels": [
  {"title": "Cache %d", "targets": [{"expr": "sum(vllm:gpu_cache_usage_perc{pod=\"p%d\"})", "refId": "A"}]},
  {"title": "Hits", "fieldConfig": {"overrides": [{"matcher": {"id": "byName", "options": "vllm:gpu_prefix_cache_hits_total %d"}}]},
   "targets": [{"expr": "rate(vllm:gpu_prefix_cache_hits_total[5m])", "refId": "A"}]}]}`, i, pad, i, i, i))
	}
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rs, err := New(cat, Options{Jobs: 2}).Paths(context.Background(), []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	findings := 0
	for _, r := range rs {
		findings += len(r.Findings)
	}
	if findings < 3*40 {
		t.Fatalf("%d findings in 40 files, want at least 3 a file", findings)
	}
	if held := int64(after.HeapAlloc) - int64(before.HeapAlloc); held > 2<<20 {
		t.Errorf("the results of 10 MB of files hold %d KB of heap, want under 2 MB", held>>10)
	}
	runtime.KeepAlive(rs)
}

// TestWalkBatches: the walk hands on its items in batches of at most batchFiles items and
// closes one as soon as its files reach batchBytes, so that the workers share large files as
// they share small ones; the items come in the walk's order, each once, whatever the batches.
// A tree of a hidden directory (skipped: an item, no file) and 103 files, four of 700 KB.
func TestWalkBatches(t *testing.T) {
	dir := t.TempDir()
	var want []string
	size := map[string]int64{}
	for i := range 103 {
		n := 1 << 10
		if i == 5 || i == 7 || i == 40 || i == 41 {
			n = 700 << 10
		}
		p := filepath.Join(dir, fmt.Sprintf("f%03d.yaml", i))
		// A NUL byte first: binary, read and then skipped, so that the workers spend nothing on
		// what the batches carry (linted text under -race took 12 s).
		mkfile(t, p, "\x00 "+strings.Repeat("x", n)+"\n")
		want, size[p] = append(want, p), int64(n+3)
	}
	mkfile(t, filepath.Join(dir, ".hidden", "a.yaml"), "a: 1\n")
	cat, err := catalog.Load()
	if err != nil {
		t.Fatal(err)
	}
	l := New(cat, Options{Jobs: 2})
	q := l.walkAll(context.Background(), []string{dir})
	defer q.close()
	var got, skipped []string
	var counts []int
	for b := range q.order {
		if b.reads {
			<-b.done
		}
		bytes := int64(0)
		for i, it := range b.items {
			if it.skipped != nil {
				skipped = append(skipped, filepath.Base(it.path))
				continue
			}
			if !it.read || it.out.err != nil {
				t.Fatalf("item %+v: want a file read", it)
			}
			if bytes >= batchBytes {
				t.Errorf("a batch goes on past %d bytes: %s at item %d", bytes, it.path, i)
			}
			bytes += size[it.path]
			got = append(got, it.path)
		}
		counts = append(counts, len(b.items))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("files in the batches (-walk order +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{".hidden"}, skipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
	// The hidden directory comes first in the walk ('.' sorts before 'f'), then the files, of
	// 1,027 bytes and four of 716,803. Worked by hand: the first batch closes at f007, the
	// second large file, its bytes past 1 MiB (1,439,768; 722,965 before it): 9 items. Then
	// f008-f039 (32 items), f040-f041 (two large files, 1,433,606 bytes), f042-f073 (32) and
	// f074-f102 (29).
	hand := []int{9, 32, 2, 32, 29}
	if diff := cmp.Diff(hand, batchCounts(append([]string{".hidden"}, want...), size)); diff != "" {
		t.Fatalf("the model of the batches disagrees with the hand count (-hand +model):\n%s", diff)
	}
	if diff := cmp.Diff(hand, counts); diff != "" {
		t.Errorf("files a batch (-want +got):\n%s", diff)
	}
}

// batchCounts is the items a batch of walkAll's rule holds, for items of these sizes in order
// (0 for one not read): a batch closes when it holds batchFiles items or its bytes reach
// batchBytes.
func batchCounts(paths []string, size map[string]int64) []int {
	var out []int
	n, b := 0, int64(0)
	for _, p := range paths {
		n, b = n+1, b+size[p]
		if n == batchFiles || b >= batchBytes {
			out, n, b = append(out, n), 0, 0
		}
	}
	if n > 0 {
		out = append(out, n)
	}
	return out
}
