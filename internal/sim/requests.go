package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/kvcheck/kvcheck/internal/audit"
)

// Defaults of the request-log adapter.
const (
	// DefaultRate is the synthetic arrival rate, in requests per second, of a log without
	// timestamps.
	DefaultRate = 1.0
	// DefaultOutputTokens is the output length of a request without max_tokens.
	DefaultOutputTokens = 256
	// MaxBlockRefs is the default bound on the block references a trace file, request log or
	// recording may expand to (--max-block-refs raises it): the simulator holds the trace in
	// memory at traceBytesPerRef (12) bytes per reference, so 768 MB.
	MaxBlockRefs = 1 << 26
	// MaxBlockRefsLimit is the most --max-block-refs may raise it to: the simulator numbers a
	// trace's distinct blocks with 32-bit ids.
	MaxBlockRefsLimit = math.MaxInt32
	// maxSiblings bounds a request's n, as --n does.
	maxSiblings = 1024
	// maxLogTime and maxLogSpan bound the arrival times of a request log (seconds): 2100,
	// and a year from the first request.
	maxLogTime = 4102444800
	maxLogSpan = 366 * 86400
)

// timeKeys are the fields that may carry a request's time, in the order they are preferred:
// gateway exports (LiteLLM's spend logs and callbacks use start_time/startTime, proxies
// timestamp or time, OpenAI-shaped records created/created_at).
var timeKeys = []string{
	"timestamp", "start_time", "startTime", "request_time", "requestTime", "created_at", "createdAt",
	"created", "time", "ts", "arrival_time",
}

// RequestLogOptions configures ReadRequests.
type RequestLogOptions struct {
	// BlockSize is the engine's block size in tokens (audit.DefaultBlockSize when 0).
	BlockSize int
	// Tokenizer gives the token ids: audit.Estimator (the default) or an exact audit.Server.
	Tokenizer audit.Tokenizer
	// Concurrency bounds the tokenize calls in flight with an exact tokenizer (default 8).
	Concurrency int
	// MaxLine is the longest accepted line (audit.DefaultMaxLine when 0).
	MaxLine int
	// Rate is the synthetic arrival rate, requests per second, used when the first request has
	// no time field (DefaultRate when 0).
	Rate float64
	// OutputTokens is the output length of requests without max_tokens or
	// max_completion_tokens (DefaultOutputTokens when 0).
	OutputTokens int
	// MaxRequests stops reading after this many requests (0: no limit).
	MaxRequests int
	// MaxBlockRefs is the most block references the trace may hold (MaxBlockRefs when 0): a log
	// that expands to more is refused with an error naming the limit and --max-block-refs.
	MaxBlockRefs int
	// MaxTraceRequests is the most requests the trace may hold (MaxRequests when 0): a log of
	// more is refused with an error naming the limit and --max-trace-requests (MaxRequests
	// above it reads a part instead).
	MaxTraceRequests int
	// Part is the advice a limit's error ends with, how to read less of the log ("simulate a
	// part of it with --max-requests N", kvcheck simulate's flag, when empty).
	Part string
	// Progress, when set, is called after every 1,000 requests with the count so far.
	Progress func(requests int)
	// Rewrite, when set, changes each request before it is tokenized (assess replays the
	// traffic as it would be once a breaker is fixed: audit.Fixer). What it changes in a
	// message's Content it changes in its Texts too, which the routers that read text see
	// (audit.Fixer does); a request without Texts is seen as string contents.
	Rewrite func(*audit.Request)
	// Source windows a database request log (--since, --until, --max-rows); ReadRequestFile
	// opens the log with it.
	Source audit.SourceOptions
	// maxViewBytes lowers MaxViewBytes in tests, memViewBytes MemViewBytes.
	maxViewBytes, memViewBytes int64
}

// logFields are what the adapter reads from a line beyond what audit.RequestReader gives.
type logFields struct {
	time         float64 // seconds since the epoch, or since whatever the field counts from
	hasTime      bool
	timeKeyName  string // the time field present on the line, read or not
	timeUnitName string
	output       int
	hasOutput    bool
	// actual says output is the completion's recorded length (an export's completion_tokens),
	// not a cap.
	actual bool
	// badOutput is the max_completion_tokens or max_tokens field, as written, that was there
	// but not a token count (negative, fractional, not a number, or above 2^30), when neither
	// gave one.
	badOutput string
	n         int
	// nText is n as written when it is above maxSiblings; badN is n as written when it is
	// not a positive integer.
	nText, badN string
}

// requestLog holds the adapter's state while it reads a log.
type requestLog struct {
	name    string
	opts    RequestLogOptions
	t       *Trace
	keys    []uint64 // one backing array for every request's blocks
	spans   [][2]int
	timeKey string // the field chosen on the first request; "" for synthetic arrivals
	// unreadTime is the time field the first request had but not as a time we read.
	unreadTime string
	timeUnit   string
	first      float64
	decided    bool

	noTime, withOutput, withN int64
	// withActual counts the requests (of withOutput) whose output length is the completion's
	// recorded length.
	withActual int64
	// cappedN counts requests whose n was above maxSiblings, badN those whose n was no positive
	// integer, badOutput those whose max tokens was no token count; each first* is the first
	// one's line and field as written.
	cappedN, badN, badOutput             int64
	firstCappedN, firstBadN, firstBadOut lineText
	// conv infers the sessions of chat requests without an id from conversation continuity;
	// withID counts requests with an id, continued those that continue an earlier request's
	// conversation, conversations the sessions started without an id.
	conv                             *audit.Conversations
	withID, continued, conversations int64
	skipped                          int64
	lineErrors                       []string
	// viewBytes is the memory of the request views kept so far; viewsDropped is set once it
	// passed MaxViewBytes.
	viewBytes    int64
	viewsDropped bool
	// texts holds the views' texts once they passed MemViewBytes; memOnly is set when no
	// temporary file could.
	texts   *textFile
	memOnly bool
}

// ReadRequests reads request logs in the format `kvcheck audit` reads (one OpenAI chat or
// completion body per line, or a gateway export with the body under a key) and turns each
// request into a chain of block keys through audit's tokenization: the byte estimate by
// default, the serving engine's own tokens with an audit.Server. The trace says which
// (Trace.Tokens); figures from estimated tokens are estimates.
//
// Arrival times come from the first of timeKeys the first request carries (numbers in seconds,
// milliseconds, microseconds or nanoseconds since the epoch, told apart by size, or RFC 3339
// text); without one, requests arrive evenly at opts.Rate. Output lengths come from
// max_completion_tokens or max_tokens, else opts.OutputTokens; n from n. Sessions are the ids
// audit detects.
//
// The input is streamed: memory is one line (at most MaxLine) plus, with an exact tokenizer,
// 3*Concurrency requests in flight and the token ids of up to 4096 recent conversations (kept
// so that repeats are tokenized once); the trace kept for the simulation holds 8 bytes per block
// reference and about 100 bytes per request, up to opts.MaxBlockRefs references and
// opts.MaxTraceRequests requests, plus each request's View for the routers that read the request itself: its text
// (about 4 bytes a token), 4 bytes a message, its headers and about 110 bytes, up to
// MaxViewBytes for the log.
func ReadRequests(ctx context.Context, r io.Reader, name string, opts RequestLogOptions) (*Trace, error) {
	if opts.BlockSize <= 0 {
		opts.BlockSize = audit.DefaultBlockSize
	}
	if opts.Tokenizer == nil {
		opts.Tokenizer = audit.Estimator{}
	}
	if opts.Rate <= 0 || math.IsNaN(opts.Rate) || math.IsInf(opts.Rate, 0) {
		opts.Rate = DefaultRate
	}
	if opts.OutputTokens <= 0 {
		opts.OutputTokens = DefaultOutputTokens
	}
	if opts.MaxBlockRefs <= 0 {
		opts.MaxBlockRefs = MaxBlockRefs
	}
	if opts.MaxTraceRequests <= 0 {
		opts.MaxTraceRequests = MaxRequests
	}
	if opts.Part == "" {
		opts.Part = "simulate a part of it with --max-requests N"
	}
	tokens := "estimated"
	if opts.Tokenizer.Exact() {
		tokens = "exact"
	}
	l := &requestLog{name: name, opts: opts, t: &Trace{
		Name: name, Format: "requests", BlockSize: opts.BlockSize, PrefixInfo: true, Tokens: tokens,
		maxRequests: opts.MaxTraceRequests,
	}, conv: audit.NewConversations(maxConversations)}
	rr := audit.NewRequestReader(r, opts.MaxLine)
	// An exact tokenizer sends the messages and chat_template_kwargs as the client sent them
	// (tool calls, images), as kvcheck audit does, so both commands see the engine's tokens.
	rr.KeepRaw = opts.Tokenizer.Exact()
	var err error
	if opts.Tokenizer.Exact() {
		err = l.readExact(ctx, rr, max(1, opts.Concurrency))
	} else {
		err = l.readEstimated(ctx, rr)
	}
	if err != nil {
		if l.texts != nil {
			l.texts.close()
		}
		return nil, err
	}
	l.doneViews()
	t, err := l.finish(rr.BodyKey())
	if err != nil {
		return nil, err
	}
	if rep, ok := audit.ReportOf(r); ok {
		// What the log's own format lost or how its fields were read (audit.Source).
		for _, s := range rep.Lossy {
			t.Notes = append(t.Notes, rep.Format.Title()+": "+s)
		}
		for _, s := range rep.Notes {
			t.Notes = append(t.Notes, rep.Format.Title()+": "+s)
		}
	}
	return t, nil
}

// next reads the next request with its extra fields; a bad line comes back as an
// *audit.LineError and reading may go on. The first request decides the time field: next runs
// on the reading goroutine only, and add sees the decision through the channel that hands it
// the request.
func (l *requestLog) next(rr *audit.RequestReader) (*audit.Request, logFields, error) {
	req, err := rr.Next()
	if err != nil {
		return nil, logFields{}, err
	}
	if l.opts.Rewrite != nil {
		l.opts.Rewrite(req)
	}
	f, err := readFields(rr.Raw(), rr.BodyKey(), l.timeKey)
	rr.Release() // the line is read: its fields are in f, the request in req
	if err != nil {
		return nil, logFields{}, &audit.LineError{Line: req.Line, Err: err}
	}
	if f.hasTime {
		// A time past 2100, or more than a year from the log's first, is no arrival of this
		// log (2^63 ns is the year 2262): used, it would stretch the simulated traffic over
		// centuries. The line is refused and counted, as other unusable lines are.
		if f.time >= maxLogTime || (l.decided && l.timeKey != "" && math.Abs(f.time-l.first) > maxLogSpan) {
			return nil, logFields{}, &audit.LineError{Line: req.Line, Err: fmt.Errorf("time %s is not an arrival of this log (past 2100, or more than a year from its first request)", strconv.FormatFloat(f.time, 'g', 6, 64))}
		}
	}
	if !l.decided {
		l.decided = true
		if f.hasTime {
			l.timeKey, l.timeUnit, l.first = f.timeKeyName, f.timeUnitName, f.time
		} else {
			l.unreadTime = f.timeKeyName
		}
	}
	return req, f, nil
}

func (l *requestLog) lineError(err error) {
	l.skipped++
	if len(l.lineErrors) < 3 {
		l.lineErrors = append(l.lineErrors, err.Error())
	}
}

func (l *requestLog) full() bool {
	return l.opts.MaxRequests > 0 && len(l.t.Requests) >= l.opts.MaxRequests
}

// readEstimated reads in one goroutine: an estimate costs less than handing it to another.
func (l *requestLog) readEstimated(ctx context.Context, rr *audit.RequestReader) error {
	var ids []uint32
	for n := 0; !l.full(); n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("request log %s: %w", l.name, err)
			}
		}
		req, f, err := l.next(rr)
		if errors.Is(err, io.EOF) {
			return nil
		}
		var le *audit.LineError
		if errors.As(err, &le) {
			l.lineError(le)
			continue
		}
		if err != nil {
			return fmt.Errorf("request log %s: %w", l.name, err)
		}
		if _, ok := l.opts.Tokenizer.(audit.Estimator); ok {
			// The estimate itself, into a reused buffer: add copies nothing but keys.
			ids = audit.EstimateIDs(audit.Render(req).Text, ids[:0])
		} else {
			toks, err := l.opts.Tokenizer.Tokenize(ctx, req)
			if err != nil {
				return fmt.Errorf("request log %s line %d: %w", l.name, req.Line, err)
			}
			ids = toks.IDs
		}
		if err := l.add(req, f, ids); err != nil {
			return err
		}
	}
	return nil
}

// readExact tokenizes with bounded concurrency and adds requests in input order, since arrival
// ties and the synthetic clock follow the input.
func (l *requestLog) readExact(ctx context.Context, rr *audit.RequestReader, n int) error {
	read := 0
	// next runs on audit's reading goroutine: it counts the requests for MaxRequests itself,
	// and bad lines are counted by the consumer, in order, so that only one goroutine touches l.
	next := func() (*audit.Request, logFields, error) {
		if l.opts.MaxRequests > 0 && read >= l.opts.MaxRequests {
			return nil, logFields{}, io.EOF
		}
		req, f, err := l.next(rr)
		if err == nil {
			read++
		}
		return req, f, err
	}
	emitted := false // emit's errors carry the log's name and line already
	err := audit.TokenizeInOrder(ctx, n, l.opts.Tokenizer, next, func(req *audit.Request, f logFields, toks audit.Tokens, err error) error {
		var le *audit.LineError
		switch {
		case errors.As(err, &le):
			l.lineError(le)
			return nil
		case err != nil:
			err = fmt.Errorf("request log %s line %d: %w", l.name, req.Line, err)
		default:
			err = l.add(req, f, toks.IDs)
		}
		emitted = err != nil
		return err
	})
	if err != nil && !emitted {
		return fmt.Errorf("request log %s: %w", l.name, err)
	}
	return err
}

// add turns one tokenized request into a simulator request.
func (l *requestLog) add(req *audit.Request, f logFields, ids []uint32) error {
	bs := l.opts.BlockSize
	nb := (len(ids) + bs - 1) / bs
	if len(l.keys)+nb > l.opts.MaxBlockRefs {
		return refsLimitError(fmt.Sprintf("request log %s line %d (blocks of %d tokens)", l.name, req.Line, bs), l.opts.MaxBlockRefs, l.opts.Part)
	}
	if len(l.t.Requests) >= l.opts.MaxTraceRequests {
		// Requests shorter than a block add no reference, so the references alone do not
		// bound the requests kept.
		return requestsLimitError(fmt.Sprintf("request log %s line %d", l.name, req.Line), l.opts.MaxTraceRequests, l.opts.Part)
	}
	from := len(l.keys)
	l.keys = appendChain(l.keys, ids, bs)
	l.spans = append(l.spans, [2]int{from, len(l.keys)})

	i := len(l.t.Requests)
	var arrival float64
	switch {
	case l.timeKey == "":
		arrival = float64(i) / l.opts.Rate
	case f.hasTime:
		arrival = f.time - l.first
	default:
		// A request without the chosen field arrives with the one before it.
		l.noTime++
		if i > 0 {
			arrival = l.t.Requests[i-1].Arrival
		}
	}
	out := l.opts.OutputTokens
	if f.hasOutput {
		out = f.output
		l.withOutput++
		if f.actual {
			l.withActual++
		}
	} else if f.badOutput != "" {
		l.badOutput++
		l.firstBadOut.note(l.badOutput, req.Line, f.badOutput)
	}
	n := 1
	if f.badN != "" {
		l.badN++
		l.firstBadN.note(l.badN, req.Line, f.badN)
	}
	if f.n > 1 {
		n = min(f.n, maxSiblings)
		l.withN++
		if f.n > maxSiblings {
			l.cappedN++
			l.firstCappedN.note(l.cappedN, req.Line, f.nText)
		}
	}
	l.t.Requests = append(l.t.Requests, Request{
		Arrival: arrival, Session: l.session(req), InputTokens: len(ids), OutputTokens: out, N: n,
	})
	l.keepView(req, &l.t.Requests[len(l.t.Requests)-1])
	if l.opts.Progress != nil && len(l.t.Requests)%1000 == 0 {
		l.opts.Progress(len(l.t.Requests))
	}
	return nil
}

// maxConversations bounds the conversations remembered to infer sessions (a hash and a
// session each, about 40 bytes).
const maxConversations = 1 << 20

// InferredSessionPrefix starts the session of a request that carried no session id and was
// grouped by conversation continuity; ids from the log are kept as they are.
const InferredSessionPrefix = "~conversation-"

// session is the request's session: its id, else for a chat request the conversation it
// continues (audit.Conversations), else none. The OpenAI user field is never a session.
func (l *requestLog) session(req *audit.Request) string {
	if req.Session != "" {
		l.withID++
		return req.Session
	}
	if !req.Chat {
		return ""
	}
	s, ok := l.conv.Infer(req)
	if ok {
		l.continued++
	} else {
		l.conversations++
		s = uint64(l.conversations)
		l.conv.Remember(req, s)
	}
	return InferredSessionPrefix + strconv.FormatUint(s, 10)
}

// finish attaches the blocks and writes the notes that say where each figure came from.
func (l *requestLog) finish(bodyKey string) (*Trace, error) {
	t := l.t
	if len(t.Requests) == 0 {
		if l.skipped > 0 {
			return nil, fmt.Errorf("request log %s: no usable request in %d lines (first: %s): want one OpenAI chat or completion body per line, or an export with the body under a key", l.name, l.skipped, audit.JoinLineErrors(l.lineErrors))
		}
		return nil, fmt.Errorf("request log %s: no requests", l.name)
	}
	for i, s := range l.spans {
		t.Requests[i].Blocks = l.keys[s[0]:s[1]:s[1]]
	}
	if t.Tokens == "exact" {
		t.Notes = append(t.Notes, "tokens: exact, from the server's /tokenize (the model's own chat template)")
	} else {
		t.Notes = append(t.Notes, fmt.Sprintf("tokens: estimated, %d bytes a token (audit's estimate); give --tokenize URL of a vLLM server for exact tokens", audit.BytesPerToken))
	}
	if bodyKey != "" {
		t.Notes = append(t.Notes, fmt.Sprintf("request bodies read from the export's %q field", bodyKey))
	}
	n := int64(len(t.Requests))
	if l.timeKey == "" {
		t.SyntheticArrivals = true
		why := "the first request has none of the time fields " + strings.Join(timeKeys, ", ")
		if l.unreadTime != "" {
			why = fmt.Sprintf("the first request's %q is not a number of (milli, micro, nano)seconds since the epoch or an RFC 3339 time", l.unreadTime)
		}
		t.Notes = append(t.Notes, fmt.Sprintf("arrivals: synthetic, one request every %s (--rate %g): %s",
			strconv.FormatFloat(1/l.opts.Rate, 'g', 4, 64)+"s", l.opts.Rate, why))
	} else {
		msg := fmt.Sprintf("arrivals: from field %q (%s)", l.timeKey, l.timeUnit)
		if l.noTime > 0 {
			msg += fmt.Sprintf("; %s without it (or unreadable) arrive with the request before them", count(l.noTime, "request", "requests"))
		}
		t.Notes = append(t.Notes, msg)
	}
	switch {
	case l.withActual == n:
		t.Notes = append(t.Notes, "output lengths: the completion tokens the log recorded for every request")
	case l.withActual > 0:
		t.Notes = append(t.Notes, fmt.Sprintf("output lengths: the completion tokens the log recorded on %d requests, max_completion_tokens or max_tokens (a cap) on %d, --output-tokens %d on the other %d", l.withActual, l.withOutput-l.withActual, l.opts.OutputTokens, n-l.withOutput))
	case l.withOutput == n:
		t.Notes = append(t.Notes, "output lengths: max_completion_tokens or max_tokens of every request (a cap: real completions may be shorter)")
	case l.withOutput > 0:
		t.Notes = append(t.Notes, fmt.Sprintf("output lengths: max_completion_tokens or max_tokens on %d requests (a cap), --output-tokens %d on the other %d", l.withOutput, l.opts.OutputTokens, n-l.withOutput))
	default:
		t.Notes = append(t.Notes, fmt.Sprintf("output lengths: --output-tokens %d for every request (none has max_tokens)", l.opts.OutputTokens))
	}
	switch {
	case l.withID == n:
		t.Notes = append(t.Notes, "sessions: every request carries a session or conversation id")
	case l.withID > 0 || l.continued > 0:
		t.Notes = append(t.Notes, fmt.Sprintf("sessions: %d requests carry a session or conversation id; %d continue an earlier request's conversation (sessions inferred from the messages); the OpenAI user field is not a session", l.withID, l.continued))
	default:
		t.Notes = append(t.Notes, "sessions: none known (no session or conversation id, and no request continues an earlier one's conversation); the OpenAI user field is not a session")
	}
	if l.withN > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%s for n > 1 and arrive as that many siblings", count(l.withN, "request asks", "requests ask")))
	}
	if l.cappedN > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%s for n above %d (first on line %d: n=%s), more than any server returns: simulated as %d siblings each", count(l.cappedN, "request asks", "requests ask"), maxSiblings, l.firstCappedN.line, l.firstCappedN.text, maxSiblings))
	}
	if l.badN > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%s an n that is not a positive integer (first on line %d: n=%s), which a server refuses: simulated as one completion each", count(l.badN, "request has", "requests have"), l.firstBadN.line, l.firstBadN.text))
	}
	if l.badOutput > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%s a max_completion_tokens or max_tokens that is not a token count of at most 2^30 (first on line %d: %s), which a server refuses: --output-tokens %d used for them", count(l.badOutput, "request has", "requests have"), l.firstBadOut.line, l.firstBadOut.text, l.opts.OutputTokens))
	}
	if l.skipped > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%s skipped (first: %s)", count(l.skipped, "line was not a usable request and was", "lines were not usable requests and were"), audit.JoinLineErrors(l.lineErrors)))
	}
	if l.full() {
		t.Notes = append(t.Notes, fmt.Sprintf("read the first %d requests only (--max-requests)", l.opts.MaxRequests))
	}
	if t.sortByArrival() {
		first := t.Requests[0].Arrival
		for i := range t.Requests {
			t.Requests[i].Arrival -= first
		}
		t.Notes = append(t.Notes, "times were not in order; requests were sorted by time")
	}
	return t, nil
}

// count writes n with the singular or plural phrase.
func count(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// appendChain appends the chained keys of ids' blocks to dst: each key depends on its block's
// tokens and on the key before it, so equal keys mean equal tokens from token 0 (as vLLM's
// block hashes do) and only true prefixes match. A partial last block gets a key too; the
// simulator never caches it.
func appendChain(dst []uint64, ids []uint32, bs int) []uint64 {
	var parent uint64
	for len(ids) > 0 {
		blk := ids[:min(bs, len(ids))]
		parent = chainKey(parent, blk)
		dst = append(dst, parent)
		ids = ids[len(blk):]
	}
	return dst
}

// chainKey is the content key of one block after parent. The block length enters the key, so
// a partial block never equals a full one.
func chainKey(parent uint64, ids []uint32) uint64 {
	h := mix64(parent ^ uint64(len(ids))<<48)
	for _, id := range ids {
		h = mix64(h ^ uint64(id))
	}
	return h
}

// readFields reads the fields of a line that audit does not keep: the time from the line's
// top level (the export record, or a plain body), max tokens and n from the body (under
// bodyKey, a dotted path, in an export). timeKey, once chosen, is the only time field read.
//
// audit has already decoded the line with encoding/json, so a second full decode would only
// repeat its work: a shallow walk over the members finds the few values needed, and only
// those are decoded. On a line that is not a JSON object the walk stops and reports it.
func readFields(line []byte, bodyKey, timeKey string) (logFields, error) {
	var f logFields
	var times [16]span // indexed like timeKeys
	keys := timeKeys
	if timeKey != "" {
		keys = []string{timeKey}
	}
	var b bodyFields
	var body, recorded span
	path := []string{}
	if bodyKey != "" {
		path = strings.Split(bodyKey, ".")
	}
	ok := audit.JSONMembers(line, func(k, v []byte) {
		if len(path) > 0 && string(k) == "completion_tokens" {
			recorded = v // an export's record of the completion (audit.Source writes it)
		}
		for i, tk := range keys {
			if string(k) == tk {
				times[i] = v
			}
		}
		if len(path) == 0 {
			b.set(k, v)
		} else if string(k) == path[0] {
			body = v
		}
	})
	if !ok {
		return f, errors.New("invalid JSON: not an object")
	}
	for i, k := range keys {
		raw := times[i]
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		// The first time field present decides; an unreadable one counts as missing.
		f.timeKeyName = k
		f.time, f.timeUnitName, f.hasTime = parseTime(json.RawMessage(raw))
		break
	}
	for depth := 1; depth <= len(path) && body != nil; depth++ {
		obj, ok := unquoted(body)
		if !ok {
			break
		}
		body = nil
		audit.JSONMembers(obj, func(k, v []byte) {
			if depth == len(path) {
				b.set(k, v)
			} else if string(k) == path[depth] {
				body = v
			}
		})
	}
	if v, ok, _ := nonNegInt(recorded); ok && v > 0 {
		f.output, f.hasOutput, f.actual = v, true, true
	}
	for _, o := range []struct {
		key string
		raw span
	}{{"max_completion_tokens", b.maxCompletionTokens}, {"max_tokens", b.maxTokens}} {
		if f.actual {
			break
		}
		v, ok, bad := nonNegInt(o.raw)
		if ok {
			f.output, f.hasOutput, f.badOutput = v, true, ""
			break
		}
		if bad && f.badOutput == "" {
			f.badOutput = o.key + "=" + jsonText(o.raw)
		}
	}
	switch v, ok, bad := nonNegInt(b.n); {
	case ok && v == 0:
		f.badN = "0"
	case ok:
		f.n = v
		if v > maxSiblings {
			f.nText = strconv.Itoa(v)
		}
	case bad && isHugeInt(b.n):
		// Beyond 2^30 and still an integer: a request for more completions than any server
		// returns, capped as any n above maxSiblings is.
		f.n, f.nText = maxSiblings+1, jsonText(b.n)
	case bad:
		f.badN = jsonText(b.n)
	}
	return f, nil
}

// jsonText is a JSON value as the line wrote it, for a note: cut to 40 bytes, since a note
// names a value and does not echo megabytes. A decoded line holds no raw control character
// (JSON escapes them inside strings), so the text is safe to print as it is.
func jsonText(raw span) string {
	if len(raw) <= 40 {
		return string(raw)
	}
	return strings.ToValidUTF8(string(raw[:40]), "") + fmt.Sprintf("... (%d bytes)", len(raw))
}

// lineText is the line and the text of the first request a note is about.
type lineText struct {
	line int64
	text string
}

// note keeps the line and text when n, the running count, is the first.
func (lt *lineText) note(n, line int64, text string) {
	if n == 1 {
		*lt = lineText{line, text}
	}
}

// span is a JSON value's bytes, pointing into the line.
type span []byte

// bodyFields are the body fields the simulator needs.
type bodyFields struct {
	maxTokens, maxCompletionTokens, n span
}

func (b *bodyFields) set(k, v span) {
	switch string(k) {
	case "max_tokens":
		b.maxTokens = v
	case "max_completion_tokens":
		b.maxCompletionTokens = v
	case "n":
		b.n = v
	}
}

// unquoted returns raw, or the JSON text inside it when it is a string (exports often hold the
// body as a string).
func unquoted(raw span) (span, bool) {
	if len(raw) == 0 {
		return nil, false
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, false
		}
		return bytes.TrimSpace([]byte(s)), true
	}
	return raw, true
}

// nonNegInt reads a non-negative integer of at most 2^30 (a JSON number, possibly in a
// string). ok is false for an absent or null field; bad is set when the field is there but
// is not such an integer (negative, fractional, too large, not a number), for the callers to
// say so rather than drop it.
func nonNegInt(raw span) (v int, ok, bad bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, false, false
	}
	s := strings.Trim(string(raw), `"`)
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || f > 1<<30 || f != math.Trunc(f) {
		return 0, false, true
	}
	return int(f), true, false
}

// isHugeInt reports a number above 2^30 with no fractional part: 1e99, or 1e400, too large
// for a float64 (ParseFloat gives +Inf and ErrRange); not "inf" or "Infinity" as text.
func isHugeInt(raw span) bool {
	f, err := strconv.ParseFloat(strings.Trim(string(raw), `"`), 64)
	if errors.Is(err, strconv.ErrRange) {
		return f > 0
	}
	return err == nil && f > 1<<30 && !math.IsInf(f, 0) && f == math.Trunc(f)
}

// parseTime reads a time as seconds: a number since the epoch in s, ms, µs or ns (told apart by
// size: a number of seconds above 1e11 would be past the year 5000), or text in RFC 3339 or the
// common "2006-01-02 15:04:05" shape (UTC when it has no zone).
func parseTime(raw json.RawMessage) (float64, string, bool) {
	s := strings.TrimSpace(string(raw))
	if len(s) > 0 && s[0] == '"' {
		var str string
		if json.Unmarshal(raw, &str) != nil {
			return 0, "", false
		}
		s = strings.TrimSpace(str)
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999"} {
			if ts, err := time.Parse(layout, s); err == nil {
				// Unix, not UnixNano: nanoseconds overflow int64 after 2262. Times before the
				// epoch are refused, as negative numbers are.
				if ts.Unix() < 0 {
					return 0, "", false
				}
				return float64(ts.Unix()) + float64(ts.Nanosecond())/1e9, "date and time", true
			}
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, "", false
	}
	switch {
	case v >= 1e17:
		return v / 1e9, "nanoseconds", true
	case v >= 1e14:
		return v / 1e6, "microseconds", true
	case v >= 1e11:
		return v / 1e3, "milliseconds", true
	}
	return v, "seconds", true
}
