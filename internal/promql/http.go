package promql

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/kvcheck/kvcheck/internal/secret"
)

// DefaultMaxResponse bounds one HTTP answer from Prometheus or a /metrics target when no other
// bound is given: hitrate's queries aggregate per replica, so their answers are kilobytes, and
// a replica's /metrics is tens of kilobytes.
const DefaultMaxResponse = 64 << 20

// ResponseTooLargeError is returned while reading an HTTP answer that goes past the bound. The
// reading stops there: nothing beyond the bound is held in memory.
type ResponseTooLargeError struct {
	URL string // redacted
	Max int64
}

func (e *ResponseTooLargeError) Error() string {
	return fmt.Sprintf("the answer of %s is larger than %d MiB (--max-response-mib): raise the limit if the server really answers that much, or narrow the query (--selector)", e.URL, e.Max>>20)
}

// CapResponses wraps rt (nil means http.DefaultTransport) so that reading any response body
// past max bytes fails with a ResponseTooLargeError. The Prometheus client reads an answer
// whole into memory before decoding it: without the cap a server streaming an endless body
// takes the process's memory with it.
func CapResponses(rt http.RoundTripper, max int64) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	if max <= 0 {
		max = DefaultMaxResponse
	}
	return capTransport{rt: rt, max: max}
}

type capTransport struct {
	rt  http.RoundTripper
	max int64
}

func (t capTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	if resp.ContentLength > t.max {
		_ = resp.Body.Close()
		return nil, &ResponseTooLargeError{URL: secret.Mask(req.URL.String()), Max: t.max}
	}
	resp.Body = &cappedBody{rc: resp.Body, left: t.max, max: t.max, url: req.URL}
	return resp, nil
}

type cappedBody struct {
	rc        io.ReadCloser
	left, max int64
	url       *url.URL
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte more tells a body of exactly the bound from a longer one.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n == 0 {
			return 0, err
		}
		return 0, &ResponseTooLargeError{URL: secret.Mask(b.url.String()), Max: b.max}
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *cappedBody) Close() error { return b.rc.Close() }

// HideBody takes the answer's body out of a Prometheus client error: the client puts the first
// bytes of an answer that is not the API's JSON into its message, and an answer (a proxy's
// error page, a login page) can reflect request headers, credentials among them. It changes
// the error in place and returns it; --verbose callers skip it.
func HideBody(err error) error {
	var apiErr *promv1.Error
	if errors.As(err, &apiErr) && apiErr.Type == promv1.ErrBadResponse {
		apiErr.Msg = "the answer is not the API's JSON (--verbose shows its start)"
		apiErr.Detail = ""
	}
	return err
}
