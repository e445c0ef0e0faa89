package report

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestVisible: control characters, invisible format characters, line separators and bytes
// that are no UTF-8 are written as escapes; the rest as it is.
func TestVisible(t *testing.T) {
	for in, want := range map[string]string{
		"plain µs – ok":         "plain µs – ok",
		"a\nb\rc\td":            `a\nb\rc\td`,
		"\x1b[31mred":           `\x1b[31mred`,
		"rtl\u202eoverride":     `rtl\u202eoverride`,
		"zero\u200dwidth":       `zero\u200dwidth`,
		"line\u2028sep":         `line\u2028sep`,
		"c1 \u009b csi":         `c1 \u009b csi`,
		"bad \x9b byte":         `bad \ufffd byte`,
		"::error::at the start": "::error::at the start", // a line's start is commandGuard's
	} {
		if got := visible(in); got != want {
			t.Errorf("visible(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSprintfEscapesArguments: every argument is escaped whatever its type and verb, the
// format and Styled arguments are not; a width pads the value before it is escaped.
func TestSprintfEscapesArguments(t *testing.T) {
	err := errors.New("open a\nb: no such file")
	got := sprintf("%s | %v | %q | %-6s| %d | %s\n", "a\nb", []string{"c\rd"}, "e\x1bf", "g\n", 42, Styled("\x1b[1mbold\x1b[0m"))
	want := `a\nb | [c\rd] | "e\x1bf" | g\n    | 42 | ` + "\x1b[1mbold\x1b[0m\n"
	if got != want {
		t.Errorf("sprintf = %q\nwant      %q", got, want)
	}
	if got := sprintf("error: %v", err); got != `error: open a\nb: no such file` {
		t.Errorf("sprintf of an error = %q", got)
	}
}

// TestCommandGuard: a line that starts, after any Unicode white space, with "::" gets a
// backslash before it, "##[" anywhere becomes "##\[", across writes that split a line; the
// rest passes byte for byte.
func TestCommandGuard(t *testing.T) {
	for _, tc := range []struct {
		writes []string
		want   string
	}{
		{[]string{"ok line\n", "  indented: value\n"}, "ok line\n  indented: value\n"},
		{[]string{"::error::x\n"}, `\::error::x` + "\n"},
		{[]string{"  \t::warning::x\n"}, "  \t" + `\::warning::x` + "\n"},
		{[]string{"\u00a0\u3000::notice::x\n"}, "\u00a0\u3000" + `\::notice::x` + "\n"},
		{[]string{"a\n::b\n::c"}, "a\n" + `\::b` + "\n" + `\::c`},
		{[]string{"  ", "::split::x\n"}, "  " + `\::split::x` + "\n"},
		{[]string{"mid ::error::x\n"}, "mid ::error::x\n"},
		{[]string{"a ##[error]legacy ##[x\n"}, `a ##\[error]legacy ##\[x` + "\n"},
		{[]string{"[::1]:8000 and ::1\n"}, "[::1]:8000 and ::1\n"},
	} {
		var b bytes.Buffer
		g := &commandGuard{w: &b}
		for _, w := range tc.writes {
			if n, err := g.Write([]byte(w)); err != nil || n != len(w) {
				t.Fatalf("Write(%q) = %d, %v", w, n, err)
			}
		}
		if b.String() != tc.want {
			t.Errorf("%q: wrote %q, want %q", tc.writes, b.String(), tc.want)
		}
	}
}

// TestWriteError: each error of a join is its own "kvcheck: " line, masked and escaped; an
// error of several %w is one line.
func TestWriteError(t *testing.T) {
	var b bytes.Buffer
	a, c := errors.New("fix a\nb: not rewritten"), errors.New("::error::c at http://u:hunter2@h/")
	WriteError(&b, errors.Join(a, fmt.Errorf("wrapped: %w", c)))
	want := "kvcheck: fix a\\nb: not rewritten\nkvcheck: wrapped: ::error::c at http://u:xxxxx@h/\n"
	if b.String() != want {
		t.Errorf("wrote %q, want %q", b.String(), want)
	}
	b.Reset()
	WriteError(&b, fmt.Errorf("%w and %w", a, c))
	if strings.Count(b.String(), "\n") != 1 || !strings.HasPrefix(b.String(), "kvcheck: fix a\\nb") {
		t.Errorf("two %%w: %q, want one line", b.String())
	}
}

// TestWriteVerbatim: lint --diff's text is written byte for byte (patch applies it) but in a
// GitHub Actions step, where a line that reads as a command puts it between
// ::stop-commands:: and the token that resumes them.
func TestWriteVerbatim(t *testing.T) {
	diff := "--- a/r.yaml\n+++ b/r.yaml\n@@ -1,2 +1,2 @@\n-a\r\n+b\r\n   ::error::forged\n"
	var b bytes.Buffer
	if err := writeVerbatim(&b, diff, Options{}); err != nil || b.String() != diff {
		t.Errorf("outside Actions: %q (%v), want the diff as it is", b.String(), err)
	}
	b.Reset()
	if err := writeVerbatim(&b, diff, Options{Actions: true}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	token, ok := strings.CutPrefix(lines[0], "::stop-commands::")
	if !ok || len(token) != 32 || lines[len(lines)-1] != "::"+token+"::" || strings.Join(lines[1:len(lines)-1], "\n")+"\n" != diff {
		t.Errorf("in Actions: %q; want the diff between ::stop-commands::TOKEN and ::TOKEN::", b.String())
	}
	b.Reset()
	clean := "--- a/r.yaml\n+++ b/r.yaml\n"
	if err := writeVerbatim(&b, clean, Options{Actions: true}); err != nil || b.String() != clean {
		t.Errorf("in Actions, nothing to stop: %q (%v), want the diff as it is", b.String(), err)
	}
}

// TestEscapeFastPaths: hasHidden is strings.ContainsFunc(s, hidden), and sprintf passing a
// string with nothing hidden as it is writes what escaping it writes, for every verb, flag,
// width and precision a format may give a string. The inputs: every rune below U+3000 alone
// and between printable ASCII, the bytes of no UTF-8, and the runes hidden holds past it.
func TestEscapeFastPaths(t *testing.T) {
	var ins []string
	for r := rune(0); r < 0x3000; r++ {
		ins = append(ins, string(r), "ab"+string(r)+"cd")
	}
	ins = append(ins, "", "\x9b", "ok\xff", "\u202e", "\u2028", "\ufeffbom", "\U000e0001", "plain text, 12:34 vllm:x")
	formats := []string{"%s", "%v", "%q", "%x", "%-12s|", "%12s|", "%.2s", "%8.3q", "%+q", "%#q", "[%s] %d"}
	for _, in := range ins {
		if got, want := hasHidden(in), strings.ContainsFunc(in, hidden); got != want {
			t.Errorf("hasHidden(%q) = %v, want %v", in, got, want)
		}
		for _, f := range formats {
			got := sprintf(f, in, 7)
			want := fmt.Sprintf(f, escaped{in}, escaped{7})
			if got != want {
				t.Errorf("sprintf(%q, %q) = %q, want %q", f, in, got, want)
			}
		}
	}
}
