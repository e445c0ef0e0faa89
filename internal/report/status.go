package report

import (
	"fmt"
	"io"
	"sync"
)

// Status writes what a command says while it works, on standard error: notes and warnings
// always, one line each, prefixed "kvcheck: "; progress only on a terminal, redrawn in place on
// one line and cleared when the work is done, so piped and captured stderr stays clean. It is
// safe for concurrent use.
type Status struct {
	mu       sync.Mutex
	w        io.Writer
	terminal bool
	drawn    bool
}

// NewStatus returns a status writer for w (standard error).
func NewStatus(w io.Writer) *Status { return &Status{w: w, terminal: IsTerminal(w)} }

// Note writes one line: something the user should know that is not a problem.
func (s *Status) Note(format string, args ...any) { s.line("kvcheck: " + fmt.Sprintf(format, args...)) }

// Warn writes one warning line: the run goes on, but something was left out or assumed.
func (s *Status) Warn(format string, args ...any) {
	s.line("kvcheck: warning: " + fmt.Sprintf(format, args...))
}

// Progress redraws the progress line, on a terminal only.
func (s *Status) Progress(format string, args ...any) {
	if !s.terminal {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintf(s.w, "\r\033[K"+format, args...)
	s.drawn = true
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
	fmt.Fprintln(s.w, msg)
}

func (s *Status) clear() {
	if s.drawn {
		fmt.Fprint(s.w, "\r\033[K")
		s.drawn = false
	}
}

// Writer is the stream the status writes to, for a logger that reports on it too.
func (s *Status) Writer() io.Writer { return s.w }
