//go:build linux

package main

// Terminal recordings: kvcheck runs on a real pseudo-terminal of 80, 120 and 200 columns, as a
// person at a terminal runs it, and the screen it leaves is compared with golden screens in
// testdata/screens (go test -run Screens -update rewrites them; read the diff before committing).
//
// Why a pty in Go rather than tmux: the test needs nothing installed (tmux is a Debian package
// the test machine may lack), works the same under go test everywhere Linux does, and reads
// the bytes kvcheck writes exactly; the pty comes from /dev/ptmx with three ioctls of the
// standard syscall package (no cgo, no new dependency), and a small screen model below turns
// those bytes into the screen a terminal would show: text, line wrapping at the width,
// carriage returns, cursor home, erase to end of line and of screen; colour is dropped.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/kvcheck/kvcheck/internal/fleet"
	"github.com/kvcheck/kvcheck/internal/testutil"
)

// openPTY opens a pseudo-terminal pair of the given size.
func openPTY(cols, rows int) (master, slave *os.File, err error) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	ioctl := func(f *os.File, req uintptr, arg unsafe.Pointer) error {
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), req, uintptr(arg)); e != 0 {
			return e
		}
		return nil
	}
	var unlock int32
	if err := ioctl(m, syscall.TIOCSPTLCK, unsafe.Pointer(&unlock)); err != nil {
		_ = m.Close()
		return nil, nil, fmt.Errorf("unlock pty: %w", err)
	}
	var n uint32
	if err := ioctl(m, syscall.TIOCGPTN, unsafe.Pointer(&n)); err != nil {
		_ = m.Close()
		return nil, nil, fmt.Errorf("pty number: %w", err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		_ = m.Close()
		return nil, nil, err
	}
	ws := struct{ rows, cols, x, y uint16 }{uint16(rows), uint16(cols), 0, 0}
	if err := ioctl(s, syscall.TIOCSWINSZ, unsafe.Pointer(&ws)); err != nil {
		_ = m.Close()
		_ = s.Close()
		return nil, nil, fmt.Errorf("window size: %w", err)
	}
	return m, s, nil
}

// ptyRun runs kvcheck (testscript.Main puts the test binary on PATH under that name) in dir on
// a terminal of cols columns; interact, when set, gets the master once the program started
// and returns when it is done with it. It returns everything written to the terminal and the
// exit code.
func ptyRun(t *testing.T, dir string, cols int, env []string, args []string, interact func(master *os.File, out *syncBuffer)) ([]byte, int) {
	t.Helper()
	bin, err := exec.LookPath("kvcheck")
	if err != nil {
		t.Skipf("kvcheck is not on PATH (testscript.Main puts it there): %v", err)
	}
	m, s, err := openPTY(cols, 500)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer func() { _ = m.Close() }()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"TERM=xterm-256color", "PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "LANG=C.UTF-8"}, env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s, s, s
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		_ = s.Close()
		t.Fatal(err)
	}
	_ = s.Close() // the child holds its own; the master reads EIO once the child is gone
	out := newSyncBuffer()
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 32<<10)
		for {
			n, err := m.Read(buf)
			out.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	if interact != nil {
		interact(m, out)
	}
	timer := time.AfterFunc(2*time.Minute, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	err = cmd.Wait()
	<-done
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.Bytes(), code
}

// ptyRunStderr runs kvcheck with standard error (and input) on a terminal of cols columns and
// standard output into a pipe, as `kvcheck ... > report.txt` at a terminal does. It returns
// what reached the terminal, what reached the pipe, and the exit code.
func ptyRunStderr(t *testing.T, dir string, cols int, args []string) (terminal, stdout []byte, code int) {
	t.Helper()
	bin, err := exec.LookPath("kvcheck")
	if err != nil {
		t.Skipf("kvcheck is not on PATH (testscript.Main puts it there): %v", err)
	}
	m, s, err := openPTY(cols, 500)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer func() { _ = m.Close() }()
	var out bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = []string{"TERM=xterm-256color", "PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "LANG=C.UTF-8"}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = s, &out, s
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		_ = s.Close()
		t.Fatal(err)
	}
	_ = s.Close()
	term := newSyncBuffer()
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 32<<10)
		for {
			n, err := m.Read(buf)
			term.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	timer := time.AfterFunc(2*time.Minute, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	err = cmd.Wait()
	<-done
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return term.Bytes(), out.Bytes(), code
}

// TestProgressOnStderrOnly: assess's replays show progress on a terminal's stderr, erased when
// done (the terminal is left blank), and none of it reaches stdout, which a person redirected
// to a file; the report there is plain text, no escape or carriage return in it.
func TestProgressOnStderrOnly(t *testing.T) {
	dir, err := filepath.Abs("../../testdata")
	if err != nil {
		t.Fatal(err)
	}
	term, out, code := ptyRunStderr(t, dir, 80, []string{"assess", "--file", "hitrate/before.prom", "--file", "hitrate/after.prom", "--window", "60s", "--requests", "assess/chat_sessions.jsonl"})
	if code != 0 {
		t.Fatalf("exit %d; terminal:\n%s", code, term)
	}
	if !bytes.Contains(term, []byte("kvcheck: replaying ")) {
		t.Errorf("no progress on the terminal's stderr: %q", term)
	}
	if scr := render(80, term); strings.TrimSpace(scr) != "" {
		t.Errorf("the progress is left on the terminal:\n%s", scr)
	}
	if bytes.ContainsAny(out, "\r\x1b") || bytes.Contains(out, []byte("replaying")) || !bytes.HasPrefix(out, []byte("Recommendation: ")) {
		t.Errorf("stdout holds progress or escapes, or does not start with the answer: %q", out)
	}
}

// syncBuffer is a buffer the reading goroutine writes while the test waits for what it holds.
type syncBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // closed and replaced at every write
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{changed: make(chan struct{})} }

func (b *syncBuffer) Write(p []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	close(b.changed)
	b.changed = make(chan struct{})
}

func (b *syncBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// waitFor waits until the bytes written satisfy ok, or ctx ends.
func (b *syncBuffer) waitFor(ctx context.Context, ok func([]byte) bool) bool {
	for {
		b.mu.Lock()
		data, ch := bytes.Clone(b.buf.Bytes()), b.changed
		b.mu.Unlock()
		if ok(data) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-ch:
		}
	}
}

// screen is what a terminal of a given width shows after the bytes written to it: enough of a
// VT100 for kvcheck's output (text, CR, LF, backspace, cursor home and position, erase in
// line and display); colours and other controls are dropped. It grows downwards instead of
// scrolling, so the whole output stays in view.
type screen struct {
	width    int
	lines    [][]rune
	row, col int
	// overflowed are the rows the terminal had to wrap because a line was wider than it: the
	// row each such line began on (origin maps a continuation row to it).
	overflowed []int
	origin     map[int]int
}

func render(width int, b []byte) string {
	s, _ := renderScreen(width, b)
	return s
}

// renderScreen is render, and the lines the terminal wrapped because kvcheck wrote them wider
// than it (the text of the row each began on), which breaks a table's box or a paragraph; but
// not verbatim text: a unified diff (lint --diff) and a configuration to apply are written as
// they are, for patch and for copying, and wrapping them would break them.
func renderScreen(width int, b []byte) (string, []string) {
	sc := &screen{width: width, origin: map[int]int{}}
	for len(b) > 0 {
		if b[0] == 0x1b {
			b = sc.escape(b)
			continue
		}
		r, n := utf8.DecodeRune(b)
		b = b[n:]
		switch r {
		case '\r':
			sc.col = 0
		case '\n':
			sc.row++
		case '\b':
			sc.col = max(0, sc.col-1)
		case '\t':
			sc.col = min(sc.width-1, (sc.col/8+1)*8)
		case 0x07:
		default:
			if r < 0x20 {
				continue
			}
			if sc.col >= sc.width {
				// Auto-wrap: a line wider than the terminal continues on the next.
				start, ok := sc.origin[sc.row]
				if !ok {
					start = sc.row
				}
				if !slices.Contains(sc.overflowed, start) {
					sc.overflowed = append(sc.overflowed, start)
				}
				sc.row++
				sc.origin[sc.row] = start
				sc.col = 0
			}
			sc.put(r)
			sc.col++
		}
	}
	var out []string
	for _, l := range sc.lines {
		out = append(out, strings.TrimRight(string(l), " "))
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	// Verbatim regions, by the logical lines that begin rows (continuation rows belong to the
	// line they continue).
	verbatim := make([]bool, len(out))
	inDiff, inSnippet := false, false
	for i, l := range out {
		if start, ok := sc.origin[i]; ok {
			verbatim[i] = verbatim[start]
			continue
		}
		switch {
		case strings.HasPrefix(l, "--- ") || strings.HasPrefix(l, "+++ ") || strings.HasPrefix(l, "@@"):
			inDiff = true
		case inDiff && l != "" && !strings.ContainsAny(l[:1], "+- "):
			inDiff = false
		}
		switch {
		case strings.HasPrefix(l, "Configuration to apply"):
			inSnippet = true
			continue
		case inSnippet && !strings.HasPrefix(l, "  "):
			inSnippet = false
		}
		verbatim[i] = inDiff || inSnippet
	}
	var wide []string
	for _, r := range sc.overflowed {
		if r < len(out) && !verbatim[r] {
			wide = append(wide, out[r])
		}
	}
	return strings.Join(out, "\n") + "\n", wide
}

func (sc *screen) line() []rune {
	for len(sc.lines) <= sc.row {
		sc.lines = append(sc.lines, nil)
	}
	return sc.lines[sc.row]
}

func (sc *screen) put(r rune) {
	l := sc.line()
	for len(l) <= sc.col {
		l = append(l, ' ')
	}
	l[sc.col] = r
	sc.lines[sc.row] = l
}

// escape interprets one escape sequence at the start of b and returns the rest.
func (sc *screen) escape(b []byte) []byte {
	if len(b) < 2 {
		return nil
	}
	switch b[1] {
	case '[':
		i := 2
		for i < len(b) && (b[i] < 0x40 || b[i] > 0x7e) {
			i++
		}
		if i >= len(b) {
			return nil
		}
		params, final := string(b[2:i]), b[i]
		num := func(k, def int) int {
			parts := strings.Split(strings.TrimPrefix(params, "?"), ";")
			if k < len(parts) {
				if v, err := strconv.Atoi(parts[k]); err == nil {
					return v
				}
			}
			return def
		}
		switch final {
		case 'H', 'f':
			sc.row, sc.col = num(0, 1)-1, num(1, 1)-1
		case 'A':
			sc.row = max(0, sc.row-num(0, 1))
		case 'B':
			sc.row += num(0, 1)
		case 'C':
			sc.col = min(sc.width-1, sc.col+num(0, 1))
		case 'D':
			sc.col = max(0, sc.col-num(0, 1))
		case 'G':
			sc.col = num(0, 1) - 1
		case 'K':
			l := sc.line()
			switch num(0, 0) {
			case 0:
				if sc.col < len(l) {
					sc.lines[sc.row] = l[:sc.col]
				}
			case 2:
				sc.lines[sc.row] = nil
			}
		case 'J':
			switch num(0, 0) {
			case 0:
				l := sc.line()
				if sc.col < len(l) {
					sc.lines[sc.row] = l[:sc.col]
				}
				sc.lines = sc.lines[:sc.row+1]
			case 2, 3:
				sc.lines = nil
			}
		}
		return b[i+1:]
	case ']':
		// OSC: up to BEL or ST.
		for i := 2; i < len(b); i++ {
			if b[i] == 0x07 {
				return b[i+1:]
			}
			if b[i] == 0x1b && i+1 < len(b) && b[i+1] == '\\' {
				return b[i+2:]
			}
		}
		return nil
	}
	return b[2:]
}

// TestRender checks the screen model on the sequences kvcheck writes.
func TestRender(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{"a\r\nb\r\n", "a\nb\n"},
		{"\x1b[1;31mred\x1b[0m\r\n", "red\n"},
		{"abcdefghij", "abcde\nfghij\n"},
		{"one\r\ntwo\r\nthree\r\n\x1b[HONE\x1b[K\r\n\x1b[J", "ONE\n"},
		{"xxxxx\rab\x1b[K\r\n", "ab\n"},
	}
	for _, tt := range tests {
		if got := render(5, []byte(tt.in)); got != tt.want {
			t.Errorf("render(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestScreens runs each command at 80, 120 and 200 columns on a terminal with colour (boxed
// tables) and compares the screen with its golden file. Besides the goldens, it checks what a
// person relies on: at 80 and 120 columns no table line is wider than the terminal (the
// terminal would wrap it and break the box).
func TestScreens(t *testing.T) {
	dir, err := filepath.Abs("../../testdata")
	if err != nil {
		t.Fatal(err)
	}
	cmds := []struct {
		name string
		args []string
		env  []string
	}{
		{"hitrate", []string{"hitrate", "--file", "hitrate/before.prom", "--file", "hitrate/after.prom"}, nil},
		{"lint", []string{"lint", "lint/grafana_rows.json", "lint/keda.yaml"}, nil},
		{"audit", []string{"audit", "--requests", "audit/requests/agent_timestamp.jsonl", "audit/templates/unit"}, nil},
		{"tap", []string{"tap", "--from", "tap/demo.kvtap", "--hash-seed", "0"}, nil},
		{"simulate", []string{"simulate", "--trace", "sim/tiny10.jsonl", "--replicas", "2", "--kv-blocks", "16"}, nil},
		{"assess", []string{"assess", "--file", "assess/healthy.prom", "--requests", "assess/chat_sessions.jsonl"}, nil},
		// Issue 27's run: two dumps a window apart and a request log, on one screen.
		{"assess_window", []string{"assess", "--file", "hitrate/before.prom", "--file", "hitrate/after.prom", "--window", "60s", "--requests", "assess/chat_sessions.jsonl"}, nil},
		{"assess_all", []string{"assess", "--file", "assess/healthy.prom", "--requests", "assess/chat_sessions.jsonl", "--evidence", "all"}, nil},
		{"metrics", []string{"metrics", "--family", "sglang"}, nil},
		// An error on the terminal's stderr is wrapped at its width, as the report is.
		{"audit_error", []string{"audit", "audit/templates/config/no_template.yaml"}, nil},
		// NO_COLOR at a terminal: plain aligned columns, no box lines, still fitted.
		{"hitrate_nocolor", []string{"hitrate", "--file", "hitrate/before.prom", "--file", "hitrate/after.prom"}, []string{"NO_COLOR=1"}},
	}
	for _, c := range cmds {
		for _, width := range []int{80, 120, 200} {
			name := fmt.Sprintf("%s_%d", c.name, width)
			t.Run(name, func(t *testing.T) {
				out, code := ptyRun(t, dir, width, c.env, c.args, nil)
				scr, wide := renderScreen(width, out)
				got := fmt.Sprintf("$ kvcheck %s    # %d columns, exit %d\n%s", strings.Join(c.args, " "), width, code, scr)
				testutil.Golden(t, filepath.Join("testdata", "screens", name+".txt"), []byte(got))
				// Every line fits: the terminal wrapped none (a table's box, a paragraph).
				for _, l := range wide {
					t.Errorf("line wider than %d columns, wrapped by the terminal: %q", width, l)
				}
				// assess answers on one screen: 60 lines at 80 columns, the widest the issue
				// asked of it, and so at any wider terminal.
				if strings.HasPrefix(c.name, "assess") && c.name != "assess_all" {
					if n := strings.Count(scr, "\n"); n > 60 {
						t.Errorf("assess takes %d lines at %d columns, want at most 60", n, width)
					}
				}
			})
		}
	}
}

// TestDemoScreens runs kvcheck demo at 80, 120 and 200 columns: its sections are the other
// commands' texts, on a live emulated fleet whose figures vary from run to run, so the screen
// is checked rather than kept: every section is there and no line is wider than the terminal.
func TestDemoScreens(t *testing.T) {
	if testing.Short() {
		t.Skip("the demo runs an emulated fleet")
	}
	for _, width := range []int{80, 120, 200} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			t.Parallel()
			out, code := ptyRun(t, t.TempDir(), width, nil, []string{"demo", "--window", "1s"}, nil)
			scr, wide := renderScreen(width, out)
			if code != 0 {
				t.Fatalf("exit %d:\n%s", code, scr)
			}
			for _, l := range wide {
				t.Errorf("line wider than %d columns, wrapped by the terminal: %q", width, l)
			}
			for _, want := range []string{"Demo: kvcheck hitrate", "Demo: kvcheck tap", "Demo: kvcheck audit", "Demo: kvcheck lint", "Demo: kvcheck simulate", "Demo: kvcheck assess", "Recommendation: "} {
				if !strings.Contains(scr, want) {
					t.Errorf("no %q on the screen", want)
				}
			}
		})
	}
}

// TestVersionScreens runs kvcheck version at 80, 120 and 200 columns: its text names the Go
// release that built it, so it is checked rather than kept: every line is there and none is
// wider than the terminal (the catalog's line wraps under its value).
func TestVersionScreens(t *testing.T) {
	for _, width := range []int{80, 120, 200} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			out, code := ptyRun(t, t.TempDir(), width, nil, []string{"version"}, nil)
			scr, wide := renderScreen(width, out)
			if code != 0 {
				t.Fatalf("exit %d:\n%s", code, scr)
			}
			for _, l := range wide {
				t.Errorf("line wider than %d columns, wrapped by the terminal: %q", width, l)
			}
			for _, want := range []string{"kvcheck version ", "  commit: ", "  go: ", "  catalog:   newest releases known: vLLM "} {
				if !strings.Contains(scr, want) {
					t.Errorf("no %q on the screen:\n%s", want, scr)
				}
			}
		})
	}
}

// TestWatchScreen runs hitrate --watch on an 80-column terminal against an emulated fleet:
// every refresh replaces the one before in place (one frame on the screen, no line wider than
// the terminal), and Ctrl-C typed at the terminal ends it with exit 0.
func TestWatchScreen(t *testing.T) {
	f := startFleet(t, fleet.Options{Replicas: fleet.Uniform(3, fleet.Config{WarmupSteps: 100}), Tick: time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := []string{"hitrate", "--scrape", strings.Join(f.Targets(), ","), "--watch", "100ms"}
	out, code := ptyRun(t, ".", 80, nil, args, func(m *os.File, out *syncBuffer) {
		if !out.waitFor(ctx, func(b []byte) bool { return refreshOf(render(80, lastFrame(b))) >= 3 }) {
			t.Errorf("no third refresh on the screen:\n%s", render(80, out.Bytes()))
		}
		if _, err := m.Write([]byte{0x03}); err != nil { // Ctrl-C, as typed
			t.Error(err)
		}
	})
	scr := render(80, out)
	if code != 0 {
		t.Errorf("exit %d after Ctrl-C, want 0:\n%s", code, scr)
	}
	if n := strings.Count(scr, "Prefix-cache hit rate, refresh"); n != 1 {
		t.Errorf("%d frames on the screen, want the last one only:\n%s", n, scr)
	}
	for _, l := range strings.Split(scr, "\n") {
		if strings.ContainsAny(l, "┌│└") && utf8.RuneCountInString(l) > 80 {
			t.Errorf("table line wider than 80 columns: %q", l)
		}
	}
	// The last whole frame, drawn alone: Ctrl-C can end the run while a frame is being written,
	// and the screen then shows the new frame's top over the one before.
	if frame := render(80, lastFrame(out)); !strings.Contains(frame, "STATE") || !strings.Contains(frame, "Δ HIT") {
		t.Errorf("the last frame lacks the state and delta columns:\n%s\nthe screen:\n%s", frame, scr)
	}
}

// refreshOf is the refresh number a --watch frame shows, 0 for none. The refreshes run on while
// the test polls the screen, so a test waits for a number at least the one it wants: an exact
// one can be passed between two polls (at 10:44 refresh 596 was on the screen of a test still
// waiting for refresh 3).
func refreshOf(frame string) int {
	m := refreshNumber.FindStringSubmatch(frame)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

var refreshNumber = regexp.MustCompile(`refresh (\d+) at`)

// lastFrame is the last frame --watch wrote whole: from its "go to the top left" to its "clear
// the rest of the screen" (nil before the first whole frame).
func lastFrame(b []byte) []byte {
	end := bytes.LastIndex(b, []byte("\x1b[J"))
	if end < 0 {
		return nil
	}
	start := bytes.LastIndex(b[:end], []byte("\x1b[H"))
	if start < 0 {
		return nil
	}
	return b[start : end+3]
}
