//go:build unix

package files

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// walkAll walks roots with one Walker and returns the files handed on (as "path" or
// "path (named)") and the skips ("path: reason", "!" before a problem's reason), with dir
// stripped from the front of every path.
func walkAll(t *testing.T, dir string, roots ...string) (got, skips []string) {
	t.Helper()
	var w Walker
	rel := func(p string) string { return strings.TrimPrefix(strings.TrimPrefix(p, dir), "/") }
	for _, r := range roots {
		err := w.Walk(context.Background(), filepath.Join(dir, r), func(p string, k Kind, named bool, _ int64) error {
			s := rel(p)
			if named {
				s += " (named)"
			}
			if k != Regular {
				s += " " + k.String()
			}
			got = append(got, s)
			return nil
		}, func(s Skip) {
			mark := ""
			if s.Problem {
				mark = "!"
			}
			skips = append(skips, rel(s.Path)+": "+mark+strings.ReplaceAll(s.Reason, dir+"/", ""))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return got, skips
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func link(t *testing.T, target, path string) {
	t.Helper()
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

func TestWalk(t *testing.T) {
	for _, tc := range []struct {
		name       string
		setup      func(t *testing.T, dir string)
		roots      []string
		want, skip []string
	}{{
		// A directory named on the command line that is a symbolic link: walked (it was
		// "no findings in 0 files").
		name: "symlinked root",
		setup: func(t *testing.T, dir string) {
			write(t, dir+"/real/a.yaml", "a")
			link(t, "real", dir+"/cfg")
		},
		roots: []string{"cfg"},
		want:  []string{"cfg/a.yaml"},
	}, {
		// A ConfigMap volume as the kubelet writes it: each file a link through ..data to a
		// timestamped directory. Each file is read once, under its visible name.
		name: "configmap mount",
		setup: func(t *testing.T, dir string) {
			write(t, dir+"/mnt/..2026_11_01_12_00_00.123/config.yaml", "a")
			write(t, dir+"/mnt/..2026_11_01_12_00_00.123/rules.yaml", "b")
			link(t, "..2026_11_01_12_00_00.123", dir+"/mnt/..data")
			link(t, "..data/config.yaml", dir+"/mnt/config.yaml")
			link(t, "..data/rules.yaml", dir+"/mnt/rules.yaml")
		},
		roots: []string{"mnt"},
		want:  []string{"mnt/config.yaml", "mnt/rules.yaml"},
		skip:  []string{"mnt/..2026_11_01_12_00_00.123: a hidden directory", "mnt/..data: a hidden directory"},
	}, {
		// Links met while walking are followed; a file reached twice is read once.
		name: "links inside",
		setup: func(t *testing.T, dir string) {
			write(t, dir+"/repo/dash/v3.json", "a")
			link(t, "v3.json", dir+"/repo/dash/latest.json")
			write(t, dir+"/shared/rules.yaml", "b")
			link(t, "../shared", dir+"/repo/shared")
		},
		roots: []string{"repo"},
		want:  []string{"repo/dash/latest.json", "repo/shared/rules.yaml"},
		skip:  []string{"repo/dash/v3.json: the same file as repo/dash/latest.json, already read"},
	}, {
		// A link back to an ancestor is a loop: reported, not followed.
		name: "loop",
		setup: func(t *testing.T, dir string) {
			write(t, dir+"/top/sub/a.yaml", "a")
			link(t, "..", dir+"/top/sub/up")
		},
		roots: []string{"top"},
		want:  []string{"top/sub/a.yaml"},
		skip:  []string{"top/sub/up: !a symbolic link loop: it leads back to top, which is being walked; not followed"},
	}, {
		name: "broken link",
		setup: func(t *testing.T, dir string) {
			write(t, dir+"/top/a.yaml", "a")
			link(t, "gone.yaml", dir+"/top/b.yaml")
		},
		roots: []string{"top"},
		want:  []string{"top/a.yaml"},
		skip:  []string{"top/b.yaml: !a symbolic link to gone.yaml, which does not exist: nothing there to check"},
	}, {
		// A named pipe in a tree is not opened (that would block until a writer came).
		name: "fifo in a tree",
		setup: func(t *testing.T, dir string) {
			write(t, dir+"/top/a.yaml", "a")
			if err := syscall.Mkfifo(dir+"/top/p", 0o644); err != nil {
				t.Fatal(err)
			}
		},
		roots: []string{"top"},
		want:  []string{"top/a.yaml"},
		skip:  []string{"top/p: !a named pipe, not read when found in a directory (reading it could block); name it on the command line to read it"},
	}, {
		// Named on the command line, a pipe is handed on, to be read cancellably.
		name: "fifo named",
		setup: func(t *testing.T, dir string) {
			if err := syscall.Mkfifo(dir+"/p", 0o644); err != nil {
				t.Fatal(err)
			}
		},
		roots: []string{"p"},
		want:  []string{"p (named) a named pipe"},
	}, {
		// Hidden directories are skipped when found, walked when named; hidden files are read.
		name: "hidden",
		setup: func(t *testing.T, dir string) {
			write(t, dir+"/top/.git/config", "a")
			write(t, dir+"/top/.env.yaml", "b")
			write(t, dir+"/.github/rules.yaml", "c")
		},
		roots: []string{"top", ".github"},
		want:  []string{"top/.env.yaml", ".github/rules.yaml"},
		skip:  []string{"top/.git: a hidden directory"},
	}, {
		name: "named twice",
		setup: func(t *testing.T, dir string) {
			write(t, dir+"/top/a.yaml", "a")
		},
		roots: []string{"top", "top/a.yaml", "top"},
		want:  []string{"top/a.yaml"},
		skip:  []string{"top/a.yaml: the same file as top/a.yaml, already read", "top: the same directory as top, already walked"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.setup(t, dir)
			got, skips := walkAll(t, dir, tc.roots...)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("files (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.skip, skips); diff != "" {
				t.Errorf("skips (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWalkMissing(t *testing.T) {
	var w Walker
	err := w.Walk(context.Background(), filepath.Join(t.TempDir(), "nope"), func(string, Kind, bool, int64) error { return nil }, func(Skip) {})
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err %v, want not exist", err)
	}
}

func TestWalkCancelled(t *testing.T) {
	dir := t.TempDir()
	write(t, dir+"/a.yaml", "a")
	write(t, dir+"/b.yaml", "b")
	ctx, cancel := context.WithCancel(context.Background())
	var w Walker
	var got []string
	err := w.Walk(ctx, dir, func(p string, _ Kind, _ bool, _ int64) error {
		got = append(got, filepath.Base(p))
		cancel()
		return nil
	}, func(Skip) {})
	if !errors.Is(err, context.Canceled) || len(got) != 1 {
		t.Fatalf("err %v after %v, want canceled after one file", err, got)
	}
}

func TestRead(t *testing.T) {
	dir := t.TempDir()
	write(t, dir+"/a", "hello")
	ctx := context.Background()
	if b, err := Read(ctx, dir+"/a", 5); err != nil || string(b) != "hello" {
		t.Errorf("Read at the limit: %q, %v", b, err)
	}
	if _, err := Read(ctx, dir+"/a", 4); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Read past the limit: %v, want ErrTooLarge", err)
	}
	if _, err := Read(ctx, "/dev/zero", 10); err == nil || !strings.Contains(err.Error(), "a device") {
		t.Errorf("Read /dev/zero: %v, want refused as a device", err)
	}
}

// TestReadFound: a file a walk found is read whole at any length against the buffer given (none,
// shorter, exactly as long, longer) and into that buffer's memory when it is long enough;
// the limit holds; what was put at the path since the walk looked (a pipe, a device) is
// refused without waiting or reading; a missing file is open's error.
func TestReadFound(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []int{0, 1, 511, 512, 4096, 70000} {
		text := strings.Repeat("abcdefg\n", n/8+1)[:n]
		write(t, dir+"/f", text)
		for _, c := range []int{0, 1, n, n + 512, n + 4096} {
			buf := make([]byte, 7, c+7)[7:]
			b, err := ReadFound(dir+"/f", 1<<20, buf)
			if err != nil || string(b) != text {
				t.Fatalf("%d bytes into a buffer of %d: %d bytes, %v", n, c, len(b), err)
			}
			if into := cap(b) > 0 && cap(buf) > 0 && &b[:1][0] == &buf[:1][0]; into != (c >= n+512) {
				t.Errorf("%d bytes into a buffer of %d: read into its memory %v, want %v", n, c, into, c >= n+512)
			}
		}
	}
	write(t, dir+"/a", "hello")
	if b, err := ReadFound(dir+"/a", 5, nil); err != nil || string(b) != "hello" {
		t.Errorf("at the limit: %q, %v", b, err)
	}
	if _, err := ReadFound(dir+"/a", 4, nil); !errors.Is(err, ErrTooLarge) {
		t.Errorf("past the limit: %v, want ErrTooLarge", err)
	}
	if _, err := ReadFound(dir+"/none", 5, nil); !errors.Is(err, os.ErrNotExist) || !strings.HasPrefix(err.Error(), "open "+dir+"/none") {
		t.Errorf("a missing file: %v, want open's error", err)
	}
	if err := syscall.Mkfifo(dir+"/p", 0o644); err != nil {
		t.Fatal(err)
	}
	for path, kind := range map[string]string{dir + "/p": "a named pipe", "/dev/null": "a device"} {
		if _, err := ReadFound(path, 5, nil); err == nil || err.Error() != kind+" since it was first looked at: not read" {
			t.Errorf("%s: %v, want refused as %s", path, err, kind)
		}
	}
}

// TestReadPipe reads a named pipe a writer fills, and gives up on one no writer opens when the
// context ends (a FIFO named as an input blocked in open() and ignored SIGTERM).
func TestReadPipe(t *testing.T) {
	dir := t.TempDir()
	p := dir + "/p"
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	go func() {
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		_, _ = f.WriteString("groups: []\n")
		_ = f.Close()
	}()
	b, err := Read(context.Background(), p, 1<<20)
	if err != nil || string(b) != "groups: []\n" {
		t.Fatalf("Read: %q, %v", b, err)
	}

	// No writer: cancelled, Read returns the cause.
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Read(ctx, p, 1<<20)
		done <- err
	}()
	stop := errors.New("stop")
	cancel(stop)
	if err := <-done; !errors.Is(err, stop) {
		t.Fatalf("cancelled Read: %v, want the cause", err)
	}

	// A writer that opens and never writes: the read blocks, and cancelling ends it.
	w := make(chan *os.File, 1)
	go func() {
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err == nil {
			w <- f
		}
	}()
	ctx, cancel = context.WithCancelCause(context.Background())
	go func() {
		_, err := Read(ctx, p, 1<<20)
		done <- err
	}()
	f := <-w // the writer is open, so the reader's open returned or will
	cancel(stop)
	if err := <-done; !errors.Is(err, stop) {
		t.Fatalf("cancelled read: %v, want the cause", err)
	}
	_ = f.Close()
}
