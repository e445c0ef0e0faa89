package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"

	"github.com/kvcheck/kvcheck/internal/vllm"
)

// gatedTokenizer is an exact tokenizer whose calls, when gated, wait until the test releases
// them, so that the test and not the scheduler decides the order calls finish in.
type gatedTokenizer struct {
	gated   bool
	fail    map[string]error // by prompt
	started chan *gatedCall

	mu       sync.Mutex
	calls    int
	inFlight int
	finished []int64 // lines, in the order their calls returned
}

type gatedCall struct {
	release chan struct{}
}

func (*gatedTokenizer) Exact() bool { return true }

func (g *gatedTokenizer) Tokenize(ctx context.Context, req *Request) (Tokens, error) {
	g.mu.Lock()
	g.calls++
	g.inFlight++
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.inFlight--
		g.mu.Unlock()
	}()
	if g.gated {
		c := &gatedCall{release: make(chan struct{})}
		g.started <- c
		select {
		case <-c.release:
		case <-ctx.Done():
			return Tokens{}, ctx.Err()
		}
	} else if err := ctx.Err(); err != nil {
		return Tokens{}, err
	}
	g.mu.Lock()
	g.finished = append(g.finished, req.Line)
	g.mu.Unlock()
	if err := g.fail[req.Prompt]; err != nil {
		return Tokens{}, err
	}
	return Tokens{IDs: fakeIDs(req), Exact: true}, nil
}

// fakeIDs are a request's own tokens: everything the cache key must tell apart changes them.
func fakeIDs(req *Request) []uint32 {
	return EstimateIDs(req.Model+"\x00"+req.Prompt+"\x00"+string(req.RawMessages)+"\x00"+string(req.RawKwargs), nil)
}

// pipelineLine is one line of a test input: a request, a bad line or a read error.
type pipelineLine struct {
	model, prompt, messages, kwargs string
	bad, readErr                    bool
}

func distinct(n int) []pipelineLine {
	lines := make([]pipelineLine, n)
	for i := range lines {
		lines[i] = pipelineLine{prompt: fmt.Sprintf("p%d", i)}
	}
	return lines
}

var (
	errBoom    = errors.New("boom")
	errRead    = errors.New("read failed")
	errRefused = &vllm.ServerError{URL: "http://tokenizer/tokenize", Status: http.StatusBadRequest, Message: "too long"}
)

// TestTokenizeInOrder runs the pipeline in a synctest bubble: calls finish in an order the test
// draws at random whenever every goroutine is blocked (synctest.Wait, no sleeps), and the bubble
// fails the test if any goroutine the pipeline started is left blocked when it returns.
func TestTokenizeInOrder(t *testing.T) {
	tests := []struct {
		name  string
		n     int
		lines []pipelineLine
		// endless: after lines, next reads distinct requests forever.
		endless bool
		gated   bool
		fail    map[string]error
		// cancelAt cancels the caller's context in emit of this line.
		cancelAt  int64
		want      []string
		wantErr   error
		wantCalls int // -1: depends on how far the cancelled pipeline got
		// maxCalls bounds the calls when wantCalls is -1: the failed line, the 2n read ahead
		// into the order queue and the one the reader held when it saw the cancellation.
		maxCalls int
		// reordered: calls must have finished out of input order.
		reordered bool
	}{
		{
			name: "in order under random latency", n: 4, lines: distinct(30), gated: true,
			want:      okLines(1, 30),
			wantCalls: 30, reordered: true,
		},
		{
			name: "a repeat is tokenized once, model and raw parts count", n: 1, gated: true,
			lines: []pipelineLine{
				{prompt: "a"}, {prompt: "b"}, {prompt: "a"},
				{prompt: "a", model: "m2"},
				{prompt: "a", kwargs: `{"x":1}`},
				{prompt: "a", messages: `[{"role":"user","content":[{"type":"image_url"}]}]`},
				{prompt: "a", model: "m2"}, {prompt: "b"},
			},
			want:      okLines(1, 8),
			wantCalls: 5,
		},
		{
			name: "the cache keeps 4096 conversations", n: 1,
			lines: append(distinct(tokenCacheSize), pipelineLine{prompt: "p0"}),
			want:  okLines(1, tokenCacheSize+1), wantCalls: tokenCacheSize,
		},
		{
			name: "a full cache is cleared", n: 1,
			lines: append(distinct(tokenCacheSize+1), pipelineLine{prompt: "p0"}),
			want:  okLines(1, tokenCacheSize+2), wantCalls: tokenCacheSize + 2,
		},
		{
			name: "line errors and 400s are passed on in place", n: 3, gated: true,
			lines: []pipelineLine{{prompt: "a"}, {bad: true}, {prompt: "too long"}, {prompt: "b"}, {bad: true}},
			fail:  map[string]error{"too long": errRefused},
			want:  []string{"1 ok", "2 skip", "3 skip", "4 ok", "5 skip"}, wantCalls: 3,
		},
		{
			name: "a tokenizer error cancels the rest", n: 2, gated: true,
			lines: distinct(40), fail: map[string]error{"p2": errBoom},
			want:    []string{"1 ok", "2 ok", "3 error"},
			wantErr: errBoom, wantCalls: -1, maxCalls: 3 + 2*2 + 1,
		},
		{
			name: "a read error ends the reading after what came before", n: 2, gated: true,
			lines:   append(distinct(3), pipelineLine{readErr: true}, pipelineLine{prompt: "never"}),
			want:    okLines(1, 3),
			wantErr: errRead, wantCalls: 3,
		},
		{
			name: "cancelling the context stops endless input", n: 1, gated: true, endless: true,
			cancelAt: 2,
			want:     []string{"1 ok", "2 ok", "3 error"},
			wantErr:  context.Canceled, wantCalls: -1, maxCalls: 3 + 2*1 + 1,
		},
		{
			name: "a context cancelled before the start reads nothing", n: 4, endless: true,
			cancelAt: -1,
			wantErr:  context.Canceled, wantCalls: 0,
		},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				if tc.cancelAt < 0 {
					cancel()
				}
				tok := &gatedTokenizer{gated: tc.gated, fail: tc.fail, started: make(chan *gatedCall, tc.n)}
				var line int64
				next := func() (*Request, int64, error) {
					line++
					if int(line) > len(tc.lines) {
						if !tc.endless {
							return nil, line, io.EOF
						}
						return &Request{Line: line, Prompt: fmt.Sprintf("endless %d", line)}, line, nil
					}
					l := tc.lines[line-1]
					switch {
					case l.bad:
						return nil, line, &LineError{Line: line, Err: errors.New("not json")}
					case l.readErr:
						return nil, line, errRead
					}
					req := &Request{Line: line, Model: l.model, Prompt: l.prompt}
					if l.messages != "" {
						req.RawMessages = json.RawMessage(l.messages)
					}
					if l.kwargs != "" {
						req.RawKwargs = json.RawMessage(l.kwargs)
					}
					return req, line, nil
				}
				var got []string
				emit := func(req *Request, extra int64, toks Tokens, err error) error {
					var le *LineError
					switch {
					case errors.As(err, &le):
						if le.Line != extra {
							t.Errorf("line error for line %d came with the extra of line %d", le.Line, extra)
						}
						got = append(got, fmt.Sprintf("%d skip", le.Line))
						return nil
					case err != nil:
						got = append(got, fmt.Sprintf("%d error", req.Line))
						return err
					}
					if req.Line != extra {
						t.Errorf("line %d came with the extra of line %d", req.Line, extra)
					}
					if !slices.Equal(toks.IDs, fakeIDs(req)) || !toks.Exact {
						got = append(got, fmt.Sprintf("%d wrong tokens", req.Line))
					} else {
						got = append(got, fmt.Sprintf("%d ok", req.Line))
					}
					if req.Line == tc.cancelAt {
						cancel()
					}
					return nil
				}
				done := make(chan error, 1)
				go func() { done <- TokenizeInOrder(ctx, tc.n, tok, next, emit) }()

				// Release one waiting call at a time, drawn at random, each time everything is
				// blocked; when nothing waits, the pipeline has returned (or is stuck, which the
				// bubble reports as a deadlock).
				rng := rand.New(rand.NewPCG(1, uint64(i)))
				var waiting []*gatedCall
				for {
					synctest.Wait()
					for drained := false; !drained; {
						select {
						case c := <-tok.started:
							waiting = append(waiting, c)
						default:
							drained = true
						}
					}
					if len(waiting) == 0 {
						break
					}
					k := rng.IntN(len(waiting))
					close(waiting[k].release)
					waiting = slices.Delete(waiting, k, k+1)
				}
				err := <-done
				tok.mu.Lock()
				inFlight := tok.inFlight
				tok.mu.Unlock()
				if inFlight != 0 {
					t.Errorf("%d tokenize calls still in flight after the return", inFlight)
				}

				if !errors.Is(err, tc.wantErr) || (err != nil) != (tc.wantErr != nil) {
					t.Errorf("error = %v, want %v", err, tc.wantErr)
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("emitted (-want +got):\n%s", diff)
				}
				if tc.wantCalls >= 0 && tok.calls != tc.wantCalls {
					t.Errorf("%d tokenize calls, want %d", tok.calls, tc.wantCalls)
				}
				if tc.wantCalls < 0 && tok.calls > tc.maxCalls {
					t.Errorf("%d tokenize calls, want at most %d", tok.calls, tc.maxCalls)
				}
				if tc.reordered && slices.IsSorted(tok.finished) {
					t.Errorf("calls finished in input order %v; the test exercised no reordering", tok.finished)
				}
			})
		})
	}
}

// okLines returns the records of lines from..to all tokenized.
func okLines(from, to int) []string {
	var s []string
	for i := from; i <= to; i++ {
		s = append(s, fmt.Sprintf("%d ok", i))
	}
	return s
}
