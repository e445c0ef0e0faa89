package promql

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// streamQuerier asks the Prometheus HTTP API's instant query as client_golang's Query does
// (a form POST to /api/v1/query, a GET when the server refuses the POST with 403, 405 or 501;
// client_golang@v1.25.0:api/prometheus/v1/api.go DoGetFallback) and decodes the answer as it
// reads it. client_golang reads the whole body into memory (up to --max-response-mib) and
// decodes it after, each label name and value a string of its own: an answer at the 64 MiB
// bound peaked at 887 MiB of heap in hitrate. Here the body is never held whole: the JSON
// decoder holds one sample at a time, and every label name and value of the answer is stored
// once (interned), so the vector is about what the answer holds.
//
// Its answers and errors are client_golang's: the same *promv1.Error types and messages for
// an HTTP error, an API error or an answer that is not the API's JSON (whose start is kept in
// the message, as client_golang's decoder does, for --verbose: HideBody takes it out).
// promv1.Option values cannot be read outside their package: the query's timeout sent to the
// server is what is left of ctx's deadline, which is how Collect bounds each query.
type streamQuerier struct {
	client *http.Client
	// endpoint is the query endpoint, /api/v1/query under the base URL.
	endpoint *url.URL
}

// newStreamQuerier returns the instant-query client of the API at base.
func newStreamQuerier(base string, client *http.Client) (streamQuerier, error) {
	u, err := url.Parse(base)
	if err != nil {
		return streamQuerier{}, err
	}
	u.Path = strings.TrimRight(u.Path, "/") + "/api/v1/query"
	return streamQuerier{client: client, endpoint: u}, nil
}

// Query evaluates query at ts (now when zero) and decodes the answer as it is read.
func (q streamQuerier) Query(ctx context.Context, query string, ts time.Time, _ ...promv1.Option) (model.Value, promv1.Warnings, promv1.Infos, error) {
	args := url.Values{"query": {query}}
	if !ts.IsZero() {
		args.Set("time", strconv.FormatFloat(float64(ts.Unix())+float64(ts.Nanosecond())/1e9, 'f', -1, 64))
	}
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl).Truncate(time.Millisecond); left >= time.Second {
			args.Set("timeout", model.Duration(left).String())
		}
	}
	v, w, i, status, err := q.do(ctx, http.MethodPost, args)
	if status == http.StatusForbidden || status == http.StatusMethodNotAllowed || status == http.StatusNotImplemented {
		v, w, i, _, err = q.do(ctx, http.MethodGet, args)
	}
	return v, w, i, err
}

// do sends one request and decodes its answer; status is the HTTP status (0 without one).
func (q streamQuerier) do(ctx context.Context, method string, args url.Values) (model.Value, promv1.Warnings, promv1.Infos, int, error) {
	u := *q.endpoint
	var body io.Reader
	if method == http.MethodGet {
		u.RawQuery = args.Encode()
	} else {
		body = strings.NewReader(args.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header["Idempotency-Key"] = nil // retried on a network error, as client_golang's is
	}
	resp, err := q.client.Do(req)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	defer func() { _ = resp.Body.Close() }() // read to its end or to the error returned
	start := &prefixReader{r: resp.Body}
	code := resp.StatusCode
	if code/100 != 2 && code != http.StatusBadRequest && code != http.StatusUnprocessableEntity {
		typ, msg := errorTypeAndMsg(code)
		detail, rerr := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		if rerr != nil {
			return nil, nil, nil, code, rerr
		}
		return nil, nil, nil, code, &promv1.Error{Type: typ, Msg: msg, Detail: string(detail)}
	}
	a, err := decodeAnswer(start)
	var tooLarge *ResponseTooLargeError
	switch {
	case errors.As(err, &tooLarge) || ctx.Err() != nil:
		return nil, nil, nil, code, cmpErr(ctx.Err(), err)
	case err != nil && code/100 != 2:
		typ, msg := errorTypeAndMsg(code)
		return nil, nil, nil, code, &promv1.Error{Type: typ, Msg: msg, Detail: string(start.prefix)}
	case err != nil:
		return nil, a.warnings, a.infos, code, &promv1.Error{Type: promv1.ErrBadResponse,
			Msg: fmt.Sprintf("%v (the answer starts %q)", err, start.prefix), Detail: string(start.prefix)}
	case code/100 != 2 && a.status == "success":
		return nil, a.warnings, a.infos, code, &promv1.Error{Type: promv1.ErrBadResponse, Msg: "inconsistent body for response code"}
	case code/100 != 2:
		return nil, a.warnings, a.infos, code, &promv1.Error{Type: promv1.ErrorType(cmpStr(a.errorType, string(promv1.ErrClient))),
			Msg: cmpStr(a.errMsg, fmt.Sprintf("client error: %d", code))}
	case a.status == "error":
		return nil, a.warnings, a.infos, code, &promv1.Error{Type: promv1.ErrorType(a.errorType), Msg: a.errMsg}
	}
	return a.value, a.warnings, a.infos, code, nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func cmpStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// errorTypeAndMsg is client_golang's error for an HTTP status that is no API answer.
func errorTypeAndMsg(code int) (promv1.ErrorType, string) {
	switch code / 100 {
	case 4:
		return promv1.ErrClient, fmt.Sprintf("client error: %d", code)
	case 5:
		return promv1.ErrServer, fmt.Sprintf("server error: %d", code)
	}
	return promv1.ErrBadResponse, fmt.Sprintf("bad response code %d", code)
}

// prefixReader keeps the first bytes read through it, for the message about an answer that
// is not the API's JSON.
type prefixReader struct {
	r      io.Reader
	prefix []byte
}

func (p *prefixReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if keep := min(n, 64-len(p.prefix)); keep > 0 {
		p.prefix = append(p.prefix, b[:keep]...)
	}
	return n, err
}

// answer is an API answer's envelope with its data decoded.
type answer struct {
	status, errorType, errMsg string
	warnings                  promv1.Warnings
	infos                     promv1.Infos
	value                     model.Value
}

// decodeAnswer reads the envelope {"status", "data": {"resultType", "result"}, "errorType",
// "error", "warnings", "infos"} member by member; a vector's samples are decoded one at a time.
func decodeAnswer(r io.Reader) (answer, error) {
	var a answer
	dec := json.NewDecoder(r)
	err := members(dec, func(key string) error {
		switch key {
		case "status":
			return dec.Decode(&a.status)
		case "errorType":
			return dec.Decode(&a.errorType)
		case "error":
			return dec.Decode(&a.errMsg)
		case "warnings":
			return dec.Decode(&a.warnings)
		case "infos":
			return dec.Decode(&a.infos)
		case "data":
			v, err := decodeData(dec)
			a.value = v
			return err
		}
		return skip(dec)
	})
	if err != nil {
		return a, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err == nil {
			err = errors.New("invalid character after the answer's object")
		}
		return a, err
	}
	return a, nil
}

// decodeData reads {"resultType": ..., "result": ...}. Prometheus writes resultType first; a
// result before it is held raw until the type is known.
func decodeData(dec *json.Decoder) (model.Value, error) {
	if t, err := dec.Token(); err != nil || t == nil {
		return nil, err // null data: no value, as client_golang leaves it
	} else if t != json.Delim('{') {
		return nil, fmt.Errorf("data: want an object, got %v", t)
	}
	var typ string
	var value model.Value
	var raw json.RawMessage
	err := membersAfterBrace(dec, func(key string) error {
		switch key {
		case "resultType":
			return dec.Decode(&typ)
		case "result":
			if typ == "" {
				return dec.Decode(&raw)
			}
			v, err := decodeResult(dec, typ)
			value = v
			return err
		}
		return skip(dec)
	})
	if err != nil || raw == nil {
		return value, err
	}
	return decodeResult(json.NewDecoder(bytes.NewReader(raw)), typ)
}

// decodeResult reads the result of a type: a vector sample by sample, the others whole.
func decodeResult(dec *json.Decoder, typ string) (model.Value, error) {
	switch typ {
	case model.ValVector.String():
		return decodeVector(dec)
	case model.ValMatrix.String():
		var m model.Matrix
		return m, dec.Decode(&m)
	case model.ValScalar.String():
		var s model.Scalar
		return &s, dec.Decode(&s)
	case model.ValString.String():
		var s model.String
		return &s, dec.Decode(&s)
	}
	return nil, fmt.Errorf("unexpected result type %q", typ)
}

// wireSample is one sample of a vector as the API writes it: its value a [time, "value"]
// pair, or a native histogram's pair (model's decoding of both, as client_golang's).
type wireSample struct {
	Metric    map[string]string          `json:"metric"`
	Value     *model.SamplePair          `json:"value"`
	Histogram *model.SampleHistogramPair `json:"histogram"`
}

// decodeVector reads a vector's samples one at a time into one reused wireSample, storing
// every label name and value of the answer once.
func decodeVector(dec *json.Decoder) (model.Vector, error) {
	if t, err := dec.Token(); err != nil || t == nil {
		return nil, err
	} else if t != json.Delim('[') {
		return nil, fmt.Errorf("vector: want an array, got %v", t)
	}
	strs := map[string]string{}
	intern := func(s string) string {
		if v, ok := strs[s]; ok {
			return v
		}
		strs[s] = s
		return s
	}
	vec := model.Vector{}
	w := wireSample{Metric: map[string]string{}}
	for dec.More() {
		clear(w.Metric)
		w.Value, w.Histogram = nil, nil
		if err := dec.Decode(&w); err != nil {
			return nil, err
		}
		s := &model.Sample{Metric: make(model.Metric, len(w.Metric))}
		for k, v := range w.Metric {
			s.Metric[model.LabelName(intern(k))] = model.LabelValue(intern(v))
		}
		switch {
		case w.Histogram != nil && w.Histogram.Histogram != nil:
			s.Timestamp, s.Histogram = w.Histogram.Timestamp, w.Histogram.Histogram
		case w.Value != nil:
			s.Timestamp, s.Value = w.Value.Timestamp, w.Value.Value
		}
		vec = append(vec, s)
	}
	_, err := dec.Token() // ']'
	return vec, err
}

// members reads an object, calling fn with each key; fn must read the key's value.
func members(dec *json.Decoder, fn func(key string) error) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if t != json.Delim('{') {
		return fmt.Errorf("want the API's JSON object, got %v", t)
	}
	return membersAfterBrace(dec, fn)
}

func membersAfterBrace(dec *json.Decoder, fn func(key string) error) error {
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := t.(string)
		if err := fn(key); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
	}
	_, err := dec.Token() // '}'
	return err
}

// skip reads past one value a token at a time, holding none of it.
func skip(dec *json.Decoder) error {
	depth := 0
	for {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}
