package cli

import (
	"bytes"
	"context"
	"io"
	"strings"
	"syscall"
	"testing"
)

// TestStdinUntil reads everything a reader gives, in reads of any size, and its error at the
// end; once the context ends, a blocked read returns the context's cause.
func TestStdinUntil(t *testing.T) {
	want := strings.Repeat("0123456789", 20000) // 200 KB: several 64 KiB reads
	r := StdinUntil(context.Background(), strings.NewReader(want))
	var got bytes.Buffer
	buf := make([]byte, 7000)
	for {
		n, err := r.Read(buf)
		got.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if got.String() != want {
		t.Errorf("read %d bytes, want the %d given", got.Len(), len(want))
	}
	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(Interrupted{Sig: syscall.SIGINT})
	if _, err := StdinUntil(ctx, pr).Read(buf); err == nil || !strings.Contains(err.Error(), "interrupted by SIGINT") {
		t.Errorf("blocked read after the context ended: %v, want the cause", err)
	}
}
