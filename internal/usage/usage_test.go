package usage

import (
	"errors"
	"fmt"
	"io"
	"testing"
)

func TestIs(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"plain", io.EOF, false},
		{"errorf", Errorf("--x %d: want 1 to 8", 9), true},
		{"wrapped once more", fmt.Errorf("assess: %w", Errorf("--today")), true},
		{"joined", errors.Join(io.EOF, Wrap(io.ErrUnexpectedEOF)), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Is(tt.err); got != tt.want {
				t.Errorf("Is(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestWrapKeepsTheCause(t *testing.T) {
	if Wrap(nil) != nil {
		t.Fatal("Wrap(nil) is not nil")
	}
	err := Wrap(io.EOF)
	if !errors.Is(err, io.EOF) || err.Error() != io.EOF.Error() {
		t.Errorf("Wrap(io.EOF) = %v: want the same message and errors.Is io.EOF", err)
	}
}
