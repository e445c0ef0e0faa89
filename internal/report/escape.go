package report

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kvcheck/kvcheck/internal/secret"
)

// Text output carries what inputs say (file names, dashboard titles and refIds, model names,
// YAML keys, label values, a server's error) inside lines kvcheck writes. It is escaped once,
// here, where text is written, never by the code that found it:
//
//   - visible writes a value's control and invisible characters as escapes, so a value can
//     neither end the line (and start one of its own, which reads as a finding or, in a
//     GitHub Actions step, as a workflow command) nor send the terminal an escape sequence.
//     Text's Line, Muted and Pre escape their arguments (sprintf), Heading, Verdict, Finding
//     and table cells their text; Status its notes' arguments; WriteError every error.
//   - commandGuard breaks, in every line written, the two forms the Actions runner reads as a
//     command: "::" at the start of a line (after white space), and "##[" anywhere
//     (actions/runner@079cdb1d05fe0ec50f8c51de5a4fa51d0eb189b0:src/Runner.Common/ActionCommand.cs
//     TryParseV2 trims the line's start, TryParse finds "##[" anywhere; ActionCommandManager
//     tries both on every line of a step's output). kvcheck's own text is neither, so only a
//     value at a line's start, say a file named "::error::x", is ever changed: to "\::error::x".

// visible writes the control characters of s (\n, \r, \t, \x1b, \u0085), its invisible
// format characters (a right-to-left override, a zero-width joiner) and line and paragraph
// separators as Go escapes.
func visible(s string) string {
	if !hasHidden(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if !hidden(r) {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRune(r) // '\n', '\x1b', '\u0085'
		if q[1] != '\\' {
			q = fmt.Sprintf("'\\u%04x'", r) // printable to Go, not to a reader
		}
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}

// hasHidden reports whether s has a character visible escapes. Printable ASCII is never one
// (the Unicode classes of hidden hold no ASCII but the controls), and kvcheck's lines are
// mostly that: a string of it is passed with one byte test a byte.
func hasHidden(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return strings.ContainsFunc(s[i:], hidden)
		}
	}
	return false
}

// hidden reports whether r is a character a value must not carry into text output raw.
func hidden(r rune) bool {
	return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp) || r == utf8.RuneError
}

// Styled is text kvcheck rendered in a style itself (a badge, a good value): its escape
// sequences are its own, so sprintf passes it on as it is.
type Styled string

// escaped formats its value as the verb asks, then escapes the result (visible): any type, any
// verb, a slice's elements included.
type escaped struct{ v any }

func (e escaped) Format(f fmt.State, verb rune) {
	_, _ = io.WriteString(f, visible(fmt.Sprintf(fmt.FormatString(f, verb), e.v)))
}

// sprintf is fmt.Sprintf with every argument escaped (visible) but Styled ones: the format is
// kvcheck's, the arguments may come from an input.
func sprintf(format string, args ...any) string {
	esc := make([]any, len(args))
	for i, a := range args {
		switch s := a.(type) {
		case Styled:
			esc[i] = string(s)
			continue
		case string:
			// A string with nothing to escape formats, with any verb, flag, width or
			// precision, to text with nothing to escape: it is passed as it is, without
			// escaped's second Sprintf.
			if !hasHidden(s) {
				esc[i] = s
				continue
			}
		}
		esc[i] = escaped{a}
	}
	return fmt.Sprintf(format, esc...)
}

// commandGuard is a writer that keeps every line written through it from being read as a
// GitHub Actions workflow command: "::" at the start of a line, after white space (Unicode
// white space, as the runner's TrimStart), becomes "\::", and "##[" anywhere "##\[".
type commandGuard struct {
	w io.Writer
	// mid says the line being written has more than white space already.
	mid bool
}

func (g *commandGuard) Write(p []byte) (int, error) {
	if _, err := g.w.Write(g.guard(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (g *commandGuard) guard(p []byte) []byte {
	var out []byte // nil until a line needs changing
	last := 0
	for i := 0; i < len(p); {
		r, n := utf8.DecodeRune(p[i:])
		switch {
		case r == '\n':
			g.mid = false
		case !g.mid && unicode.IsSpace(r):
		case !g.mid && bytes.HasPrefix(p[i:], []byte("::")):
			out = append(append(out, p[last:i]...), '\\')
			last, g.mid = i, true
		case bytes.HasPrefix(p[i:], []byte("##[")):
			out = append(append(out, p[last:i+2]...), '\\')
			last, g.mid = i+2, true
		default:
			g.mid = true
		}
		i += n
	}
	if out == nil {
		return p
	}
	return append(out, p[last:]...)
}

// WriteError writes err on w (standard error) as kvcheck's error lines: "kvcheck: " and the
// error, masked (secret.Mask) and escaped (visible), one line for each error an errors.Join
// holds (at a terminal wrapped at its width, the rest of an error hanging two columns in).
func WriteError(w io.Writer, err error) {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var msgs []string
		for _, e := range j.Unwrap() {
			if e != nil {
				msgs = append(msgs, e.Error())
			}
		}
		if strings.Join(msgs, "\n") == err.Error() { // a join, not fmt.Errorf("%w ... %w")
			for _, e := range j.Unwrap() {
				if e != nil {
					WriteError(w, e)
				}
			}
			return
		}
	}
	width := 0
	if IsTerminal(w) {
		width = terminalWidth(w) // wrapped as the report is
	}
	writeWrapped(&commandGuard{w: w}, "kvcheck: "+visible(secret.Mask(err.Error())), width)
}

// writeVerbatim writes text kvcheck passes on as it is (lint --diff's unified diff, whose
// context lines are the file's), so that patch applies it: byte for byte, but for two cases.
// At a terminal, its control characters but tabs and newlines are escaped (visible), so a
// file's escape sequences reach no terminal. In a GitHub Actions step, when a line would read
// as a workflow command, the text is written between ::stop-commands:: and the token that
// resumes them, as GitHub's documentation says to print untrusted text, unless standard output
// is a file (kvcheck lint --diff > fix.patch), which the runner does not read.
func writeVerbatim(w io.Writer, s string, o Options) error {
	if IsTerminal(w) {
		var b strings.Builder
		for i, line := range strings.Split(s, "\n") {
			if i > 0 {
				b.WriteByte('\n')
			}
			for j, field := range strings.Split(line, "\t") {
				if j > 0 {
					b.WriteByte('\t')
				}
				b.WriteString(visible(field))
			}
		}
		s = b.String()
	}
	if o.Actions && !isFile(w) && readsAsCommand(s) {
		token, err := stopToken()
		if err != nil {
			return err
		}
		s = "::stop-commands::" + token + "\n" + s + "::" + token + "::\n"
	}
	_, err := io.WriteString(w, s)
	return err
}

// readsAsCommand reports whether a line of s would read as a workflow command (commandGuard
// would change it).
func readsAsCommand(s string) bool {
	g := commandGuard{w: io.Discard}
	return len(g.guard([]byte(s))) != len(s)
}

// stopToken is a ::stop-commands:: token no input can guess: 16 random bytes in hex.
func stopToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// isFile reports whether w is a regular file (not a pipe or a terminal).
func isFile(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode().IsRegular()
}
