package cli

import (
	"context"
	"fmt"
	"io"
)

// StdinUntil returns r (standard input) as a reader whose Read returns as soon as ctx ends,
// even while the read it waits for is blocked (an idle pipe, a terminal, a FIFO with no writer
// yet): the first Ctrl-C or SIGTERM then ends a command that is reading stdin instead of
// waiting for more input. The read still blocked is left to the process's exit; no command
// reads stdin after its context ended. Reads go through one buffer of 64 KiB, one goroutine a
// read, so the cost is a goroutine switch per 64 KiB.
func StdinUntil(ctx context.Context, r io.Reader) io.Reader {
	return &untilReader{ctx: ctx, r: r, results: make(chan readResult, 1)}
}

type readResult struct {
	n   int
	err error
}

type untilReader struct {
	ctx     context.Context
	r       io.Reader
	buf     []byte
	pending []byte // read and not yet handed out
	err     error  // the read's error, handed out after pending
	waiting bool   // a read is in flight
	results chan readResult
}

func (u *untilReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if len(u.pending) == 0 && u.err == nil {
		if !u.waiting {
			if u.buf == nil {
				u.buf = make([]byte, 64<<10)
			}
			u.waiting = true
			go func() {
				n, err := u.r.Read(u.buf)
				u.results <- readResult{n, err}
			}()
		}
		select {
		case res := <-u.results:
			u.waiting = false
			u.pending, u.err = u.buf[:res.n], res.err
		case <-u.ctx.Done():
			return 0, fmt.Errorf("read standard input: %w", context.Cause(u.ctx))
		}
	}
	n := copy(p, u.pending)
	u.pending = u.pending[n:]
	if len(u.pending) == 0 && u.err != nil {
		return n, u.err
	}
	return n, nil
}
