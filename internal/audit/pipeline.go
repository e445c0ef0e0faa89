package audit

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/maphash"
	"io"
	"net/http"
	"sync"

	"github.com/kvcheck/kvcheck/internal/vllm"
)

// tokenCacheSize bounds the recent conversations whose token ids TokenizeInOrder keeps, so that
// repeats (retries, identical prompts) are tokenized once; the cache is cleared when full.
const tokenCacheSize = 4096

// TokenizeInOrder tokenizes the requests next reads, up to n at a time through tok, and hands
// each to emit in the order next read it: callers whose results depend on order (first seen,
// arrival ties) get concurrent tokenization without reordering. Identical conversations are
// tokenized once while they stay in a cache of recent ones (4096 at most, cleared when full).
//
// next is called from a goroutine of its own, one call at a time. It returns io.EOF at the end;
// a *LineError for a line to skip, which is passed on to emit in its place; any other error
// ends the reading, and TokenizeInOrder returns it once what was read before it has been
// emitted. extra rides along with the request to emit. What next writes before it returns is
// visible to emit for that request and every later one.
//
// emit is called on the caller's goroutine, once per line next read, in that order, until it
// returns an error. err is nil and toks are the request's tokens; or err is a *LineError for a
// line to skip: next's (req is then what next returned, nil for a line that did not parse) or
// the server's 400 refusal of the request; or err is the tokenizer's error, which emit may
// return. When emit returns an error, the rest is cancelled and TokenizeInOrder returns that
// error once every tokenize call it started has returned. When ctx is cancelled, reading stops
// and tokenize calls in flight fail with ctx's error; TokenizeInOrder returns emit's error, else
// ctx's.
func TokenizeInOrder[T any](ctx context.Context, n int, tok Tokenizer,
	next func() (*Request, T, error),
	emit func(req *Request, extra T, toks Tokens, err error) error,
) error {
	n = max(1, n)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type job struct {
		req   *Request
		extra T
		key   uint64
		toks  Tokens
		err   error
		done  chan struct{}
	}
	work := make(chan *job, n)
	order := make(chan *job, 2*n)
	var (
		mu    sync.Mutex
		cache = make(map[uint64]Tokens)
		seed  = maphash.MakeSeed()
		wg    sync.WaitGroup
	)
	for range n {
		wg.Go(func() {
			for j := range work {
				mu.Lock()
				toks, ok := cache[j.key]
				mu.Unlock()
				if ok {
					j.toks = toks
				} else if j.toks, j.err = tok.Tokenize(ctx, j.req); j.err == nil {
					mu.Lock()
					if len(cache) >= tokenCacheSize {
						clear(cache)
					}
					cache[j.key] = j.toks
					mu.Unlock()
				}
				close(j.done)
			}
		})
	}
	readErr := make(chan error, 1)
	go func() {
		// order closes last: the consumer's range over it ends only when this goroutine has.
		defer close(order)
		defer close(work)
		readErr <- func() error {
			for {
				if err := ctx.Err(); err != nil {
					return err
				}
				req, extra, err := next()
				if errors.Is(err, io.EOF) {
					return nil
				}
				j := &job{req: req, extra: extra, done: make(chan struct{})}
				var le *LineError
				skip := errors.As(err, &le)
				switch {
				case skip:
					j.err = err
					close(j.done)
				case err != nil:
					return err
				default:
					j.key = cacheKey(seed, req)
				}
				select {
				case order <- j:
				case <-ctx.Done():
					return ctx.Err()
				}
				if skip {
					continue
				}
				select {
				case work <- j:
				case <-ctx.Done():
					// The job is already queued in order: finish it so the consumer does not wait.
					j.err = ctx.Err()
					close(j.done)
					return ctx.Err()
				}
			}
		}()
	}()
	var firstErr error
	for j := range order {
		<-j.done
		if firstErr != nil {
			continue
		}
		err := j.err
		var se *vllm.ServerError
		if errors.As(err, &se) && se.Status == http.StatusBadRequest {
			// One request the server refused (too long for the model, say): a line to skip.
			err = &LineError{Line: j.req.Line, Err: se}
		}
		if err := emit(j.req, j.extra, j.toks, err); err != nil {
			firstErr = err
			cancel()
		}
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return <-readErr
}

// cacheKey identifies what a tokenizer is sent for req: the model (a server with several has a
// template for each), the rendered text, and the messages and chat_template_kwargs as sent, since
// two requests whose text renders alike may still differ in what the template sees (images, tool
// call ids, kwargs). The lengths go first so that no two different requests hash the same bytes.
func cacheKey(seed maphash.Seed, req *Request) uint64 {
	text := Render(req).Text
	var h maphash.Hash
	h.SetSeed(seed)
	var lens [4 * binary.MaxVarintLen64]byte
	b := lens[:0]
	for _, n := range []int{len(req.Model), len(text), len(req.RawMessages), len(req.RawKwargs)} {
		b = binary.AppendUvarint(b, uint64(n))
	}
	_, _ = h.Write(b)
	_, _ = h.WriteString(req.Model)
	_, _ = h.WriteString(text)
	_, _ = h.Write(req.RawMessages)
	_, _ = h.Write(req.RawKwargs)
	return h.Sum64()
}
