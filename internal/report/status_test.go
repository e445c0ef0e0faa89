package report

import (
	"bytes"
	"testing"
	"time"
)

// TestStatusProgress: progress is drawn only on a terminal, one line cut short of its width,
// at most every progressEvery, and erased before a note and at the end.
func TestStatusProgress(t *testing.T) {
	var b bytes.Buffer
	s := &Status{w: &b, terminal: true, width: 20}
	// "kvcheck: replaying 3/18 simulations" is 35 cells: cut to 18, "kvcheck: replaying", and
	// the ellipsis makes 19, one short of the width.
	s.Progress("replaying %d/%d simulations", 3, 18)
	if got, want := b.String(), "\r\x1b[Kkvcheck: replaying…"; got != want {
		t.Errorf("first draw %q, want %q", got, want)
	}
	b.Reset()
	s.Progress("replaying %d/%d", 4, 18) // within progressEvery of the first: skipped
	if b.Len() != 0 {
		t.Errorf("a redraw within %s: %q", progressEvery, b.String())
	}
	s.last, s.width = time.Now().Add(-progressEvery), 40
	s.Progress("replaying %d/%d", 5, 18)
	if got, want := b.String(), "\r\x1b[Kkvcheck: replaying 5/18"; got != want {
		t.Errorf("later draw %q, want %q", got, want)
	}
	b.Reset()
	s.Note("a note")
	if got, want := b.String(), "\r\x1b[Kkvcheck: a note\n"; got != want {
		t.Errorf("note %q, want the progress erased first: %q", got, want)
	}
	b.Reset()
	s.Done()
	if b.Len() != 0 {
		t.Errorf("Done after a note erased nothing drawn: %q", b.String())
	}
	s.Progress("again")
	b.Reset()
	s.Done()
	if got := b.String(); got != "\r\x1b[K" {
		t.Errorf("Done %q, want the line erased", got)
	}

	// Piped: nothing but notes.
	b.Reset()
	p := NewStatus(&b)
	p.Progress("replaying 1/2")
	p.Done()
	p.Note("n")
	if got := b.String(); got != "kvcheck: n\n" {
		t.Errorf("piped %q, want the note alone", got)
	}
}

// TestStatusWraps: a note wider than the terminal is wrapped at its width, the rest hanging two
// columns in; piped it stays one line, whatever its length, so grep sees it whole.
func TestStatusWraps(t *testing.T) {
	var b bytes.Buffer
	s := &Status{w: &b, terminal: true, width: 30}
	// "kvcheck: template a.yaml: no chat template in it" is 48 cells.
	s.Note("template a.yaml: no chat template in it")
	if got, want := b.String(), "kvcheck: template a.yaml: no\n  chat template in it\n"; got != want {
		t.Errorf("at 30 columns %q, want %q", got, want)
	}
	b.Reset()
	NewStatus(&b).Note("template a.yaml: no chat template in it")
	if got, want := b.String(), "kvcheck: template a.yaml: no chat template in it\n"; got != want {
		t.Errorf("piped %q, want %q", got, want)
	}
}
