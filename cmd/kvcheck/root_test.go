package main

import (
	"bytes"
	"context"
	"testing"
)

func TestRunExitCodes(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"help", []string{"--help"}, exitOK},
		{"unknown flag", []string{"--nope"}, exitUsage},
		{"unknown command", []string{"nope"}, exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			got := run(context.Background(), tt.args, streams{Out: &out, ErrOut: &errOut}, nil)
			if got != tt.want {
				t.Errorf("run(%q) = %d, want %d; stderr:\n%s", tt.args, got, tt.want, errOut.String())
			}
		})
	}
}

func TestFailOn(t *testing.T) {
	if err := failOn("warning").check(0); err != nil {
		t.Errorf("info under --fail-on warning: got %v, want nil", err)
	}
	if err := failOn("warning").check(1); err == nil {
		t.Error("warning under --fail-on warning: got nil, want findings error")
	}
	if err := failOn("").check(2); err != nil {
		t.Errorf("no --fail-on: got %v, want nil", err)
	}
	if err := failOn("bogus").validate(); err == nil {
		t.Error("--fail-on bogus: got nil, want usage error")
	}
}
