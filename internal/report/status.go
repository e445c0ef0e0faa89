package report

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/kvcheck/kvcheck/internal/secret"
)

// Status writes what a command says while it works, on standard error: notes and warnings
// always, prefixed "kvcheck: ", wrapped at a terminal's width (one line each when piped, so
// grep sees them whole); progress only on a terminal that can erase a
// line (not TERM=dumb), redrawn in place on one line cut to the terminal's width (a wrapped
// line would leave its first rows behind), at most ten times a second, and erased before any
// note and when the work is done, so piped and captured stderr stays clean and no progress is
// left in front of the report. It is safe for concurrent use.
type Status struct {
	mu       sync.Mutex
	w        io.Writer
	terminal bool
	width    int
	drawn    bool
	last     time.Time // when the progress line was last drawn
}

// progressEvery is the least time between two redraws of the progress line: a replay reports
// every simulation, and a terminal recording would otherwise hold each.
const progressEvery = 100 * time.Millisecond

// NewStatus returns a status writer for w (standard error).
func NewStatus(w io.Writer) *Status {
	// No line it writes, a logger's included (Writer), reads as a workflow command.
	tty := IsTerminal(w)
	s := &Status{w: &commandGuard{w: w}, terminal: tty && os.Getenv("TERM") != "dumb"}
	if tty {
		s.width = terminalWidth(w)
	}
	return s
}

// Note writes one line: something the user should know that is not a problem. The
// arguments are escaped (sprintf).
func (s *Status) Note(format string, args ...any) { s.line("kvcheck: " + sprintf(format, args...)) }

// Warn writes one warning line: the run goes on, but something was left out or assumed.
func (s *Status) Warn(format string, args ...any) {
	s.line("kvcheck: warning: " + sprintf(format, args...))
}

// Progress redraws the progress line, "kvcheck: " and the message, on a terminal only.
func (s *Status) Progress(format string, args ...any) {
	if !s.terminal {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if s.drawn && now.Sub(s.last) < progressEvery {
		return
	}
	msg := "kvcheck: " + secret.Mask(sprintf(format, args...))
	if s.width > 1 && lipgloss.Width(msg) > s.width-1 {
		// One column short of the width: a line that fills it moves some terminals' cursor on.
		r := []rune(msg)
		for len(r) > 0 && lipgloss.Width(string(r)) > s.width-2 {
			r = r[:len(r)-1]
		}
		msg = strings.TrimRight(string(r), " ") + "…"
	}
	fmt.Fprint(s.w, "\r\033[K"+msg)
	s.drawn, s.last = true, now
}

// Done clears the progress line, if one was drawn.
func (s *Status) Done() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clear()
}

func (s *Status) line(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clear()
	writeWrapped(s.w, secret.Mask(msg), s.width)
}

// writeWrapped writes msg wrapped at width (0: one line), each line of it on its own.
func writeWrapped(w io.Writer, msg string, width int) {
	for _, para := range strings.Split(msg, "\n") {
		for _, l := range wrapProse(para, width) {
			fmt.Fprintln(w, l)
		}
	}
}

func (s *Status) clear() {
	if s.drawn {
		fmt.Fprint(s.w, "\r\033[K")
		s.drawn = false
	}
}

// Writer is the stream the status writes to, for a logger that reports on it too: a line
// written to it is guarded as the status's own are (commandGuard); a structured logger
// quotes its values' control characters itself.
func (s *Status) Writer() io.Writer { return s.w }
