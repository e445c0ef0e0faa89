package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/kvcheck/kvcheck/internal/litellmdb"
)

// Request logs are read in the formats the stacks in front of vLLM already write, told apart by
// content, never by name: OpenAI bodies or gateway exports one per line (read as they are), and
// LiteLLM's spend-log rows, Langfuse exports, OpenTelemetry GenAI spans and vLLM's own log
// lines, each turned into the export records the request reader reads (one JSON object a
// line: the body under "body", the session under "session_id", the time under "timestamp",
// the completion's length under "completion_tokens"). Every reader of requests (audit,
// simulate, assess) therefore sees the same requests, whatever the format.

// LogFormat names a request log's format.
type LogFormat string

// The request log formats.
const (
	LogJSONL    LogFormat = "jsonl"
	LogLiteLLM  LogFormat = "litellm"
	LogLangfuse LogFormat = "langfuse"
	LogOTLP     LogFormat = "otlp"
	LogVLLM     LogFormat = "vllm-log"
)

// Title is the format as messages name it.
func (f LogFormat) Title() string {
	switch f {
	case LogLiteLLM:
		return "LiteLLM spend logs"
	case LogLangfuse:
		return "Langfuse export"
	case LogOTLP:
		return "OpenTelemetry spans (OTLP JSON)"
	case LogVLLM:
		return "vLLM request log lines"
	}
	return "JSONL request log"
}

// SourceReport is what reading a log in another project's format found beyond its requests:
// what its records lost (Lossy: figures the reader must read with care, a warning) and how its
// fields were read (Notes). It is complete once the log has been read to its end.
type SourceReport struct {
	Format LogFormat
	Lossy  []string
	Notes  []string
}

// sourceReporter is a reader of requests that can say what its source lost; Source is one, and
// AuditRequests and the simulator's reader ask for it.
type sourceReporter interface {
	SourceReport() SourceReport
}

// ReportOf returns what the request log r (as OpenRequests opened it) said about its source,
// once read; a plain reader reports nothing.
func ReportOf(r io.Reader) (SourceReport, bool) {
	if sr, ok := r.(sourceReporter); ok {
		rep := sr.SourceReport()
		return rep, rep.Format != "" && rep.Format != LogJSONL
	}
	return SourceReport{}, false
}

// converter reads records of one outside format and hands out request lines: a JSON object
// (see the package comment above), or a skip record (skipLine) for a record that is no usable
// request, with the reason. next returns io.EOF at the end, or the error that ends the read.
type converter interface {
	next() ([]byte, error)
	report() SourceReport
}

// Source is a request log opened by OpenRequests: its requests as lines the RequestReader
// reads, whatever format the log was written in.
type Source struct {
	Name   string
	Format LogFormat
	r      io.Reader // the log itself, for LogJSONL
	conv   converter
	line   []byte
	pos    int
	done   error
	closer func()
	// notes, when set, says what a database read covered (litellmdb.Rows.Notes).
	notes func() []string
}

// Read hands out the log as request lines.
func (s *Source) Read(p []byte) (int, error) {
	if s.conv == nil {
		return s.r.Read(p)
	}
	n := 0
	for n < len(p) {
		if s.pos < len(s.line) {
			c := copy(p[n:], s.line[s.pos:])
			s.pos += c
			n += c
			continue
		}
		if s.done != nil {
			break
		}
		line, err := s.conv.next()
		if err != nil {
			s.done = err
			if !errors.Is(err, io.EOF) {
				// An error the reader stops at names the source.
				s.done = fmt.Errorf("%s %s: %w", s.Format.Title(), s.Name, err)
			}
			continue
		}
		s.line = append(append(s.line[:0], line...), '\n')
		s.pos = 0
	}
	if n == 0 && s.done != nil {
		return 0, s.done
	}
	return n, nil
}

// Close closes the log.
func (s *Source) Close() error {
	if s.closer != nil {
		s.closer()
	}
	return nil
}

// SourceReport says what the source lost, once read to its end.
func (s *Source) SourceReport() SourceReport {
	rep := SourceReport{}
	if s.conv != nil {
		rep = s.conv.report()
	}
	rep.Format = s.Format
	if s.notes != nil {
		rep.Notes = append(s.notes(), rep.Notes...)
	}
	return rep
}

// skipKey is the member of a skip record: a record of the outside format that is no usable
// request, with the reason, which the RequestReader reports as the line's error (and counts).
const skipKey = "kvcheck_skip"

// skipLine is the skip record for reason.
func skipLine(reason string) []byte {
	b, _ := json.Marshal(map[string]string{skipKey: reason})
	return b
}

// skipReason returns the reason of a skip record, or false for any other line.
func skipReason(line []byte) (string, bool) {
	if !bytes.HasPrefix(line, []byte(`{"`+skipKey+`":`)) {
		return "", false
	}
	var m map[string]string
	if json.Unmarshal(line, &m) != nil {
		return "", false
	}
	return m[skipKey], true
}

// record is one request in the common form the converters write.
type record struct {
	Body             map[string]any `json:"body"`
	SessionID        string         `json:"session_id,omitempty"`
	Timestamp        any            `json:"timestamp,omitempty"`
	CompletionTokens *int64         `json:"completion_tokens,omitempty"`
	// Where names the record in the source (a row's request id, a span's id), for messages.
	Where string `json:"source_record,omitempty"`
}

func (r record) line() []byte {
	b, err := json.Marshal(r)
	if err != nil {
		return skipLine(fmt.Sprintf("%s: %v", r.Where, err))
	}
	return b
}

// SourceOptions bound and window what a request source reads.
type SourceOptions struct {
	// MaxLine is the longest record accepted (DefaultMaxLine when 0): a longer one is skipped
	// and counted, as a longer line of JSONL is.
	MaxLine int
	// Window bounds the rows read from LiteLLM's database (--since, --until, --max-rows); a
	// file is read whole.
	Window litellmdb.Window
}

// detectLimit is how much of a log is looked at to tell its format: the first JSON value (a
// line of JSONL, an OTLP batch, the first element of an array) must end within it.
const detectLimit = 8 << 20

// detect wraps r in the converter for its format, told from its first bytes: JSON that is an
// OTLP batch, a Langfuse trace or observation, or a LiteLLM spend-log row is converted; other
// JSON is read as it is; text that is not JSON is read as vLLM's log. r must be past any byte
// order mark.
func detect(r io.Reader, name string, opts SourceOptions) (*Source, error) {
	maxLine := opts.MaxLine
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	br := bufio.NewReaderSize(r, 256<<10)
	first, err := firstNonSpace(br)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return &Source{Name: name, Format: LogJSONL, r: br}, nil
		}
		return nil, fmt.Errorf("request log %s: %w", name, err)
	}
	if first != '{' && first != '[' {
		return &Source{Name: name, Format: LogVLLM, conv: newVLLMLog(br, maxLine)}, nil
	}
	vs := newValueStream(br, max(maxLine, detectLimit))
	peek, err := vs.peek()
	var tl *tooLongError
	if err != nil && !errors.As(err, &tl) && len(bytes.TrimSpace(vs.read)) > 0 {
		if f := sniffFormat(vs.read); f != LogJSONL {
			// An export that stops inside its first document (a pretty-printed Langfuse
			// trace, an OTLP batch): said as such, not as lines of JSONL that do not parse.
			return nil, fmt.Errorf("%s %s: the file ends inside its first JSON document, after %d bytes: the export was cut short; export it again", f.Title(), name, len(vs.read))
		}
	}
	if err != nil {
		// Not one complete JSON value within the limit: read as JSONL, which reports its lines.
		return &Source{Name: name, Format: LogJSONL, r: vs.rest()}, nil
	}
	vs.limit = maxLine
	switch f := logFormatOf(peek); f {
	case LogOTLP:
		return &Source{Name: name, Format: f, conv: newOTLP(vs)}, nil
	case LogLangfuse:
		return &Source{Name: name, Format: f, conv: newLangfuse(vs)}, nil
	case LogLiteLLM:
		return &Source{Name: name, Format: f, conv: newLiteLLM(vs)}, nil
	}
	if vs.inArray && len(peek) > 0 && peek[0] == '{' {
		// An array of request bodies: one a line, as JSONL holds them.
		return &Source{Name: name, Format: LogJSONL, conv: &plainValues{vs: vs}}, nil
	}
	return &Source{Name: name, Format: LogJSONL, r: vs.rest()}, nil
}

// sniffFormat names the format of a log whose first document could not be read whole, from
// the names it holds: LogJSONL when none tells.
func sniffFormat(b []byte) LogFormat {
	has := func(s string) bool { return bytes.Contains(b, []byte(s)) }
	switch {
	case has(`"resourceSpans"`) || has(`"resource_spans"`):
		return LogOTLP
	case has(`"call_type"`) && has(`"request_id"`):
		return LogLiteLLM
	case has(`"traceId"`) || has(`"trace_id"`) || has(`"observations"`):
		return LogLangfuse
	}
	return LogJSONL
}

// firstNonSpace peeks at the first byte that is not white space.
func firstNonSpace(br *bufio.Reader) (byte, error) {
	for {
		b, err := br.ReadByte()
		if err != nil {
			return 0, err
		}
		if b != ' ' && b != '\t' && b != '\n' && b != '\r' {
			return b, br.UnreadByte()
		}
	}
}

// logFormatOf tells the format of a log from its first record.
func logFormatOf(v []byte) LogFormat {
	// The members point into v (a 60 MB first record is not copied to be told); a name that
	// is not plain is decoded as encoding/json decodes it.
	keys := map[string]json.RawMessage{}
	if !validJSON(v) || !JSONMembers(v, func(k, val []byte) {
		name := string(k)
		if !plainKey(k) {
			_ = json.Unmarshal(append(append([]byte{'"'}, k...), '"'), &name) // valid: v is
		}
		keys[name] = val
	}) {
		return LogJSONL
	}
	has := func(k string) bool { _, ok := keys[k]; return ok }
	switch {
	case has("resourceSpans") || has("resource_spans"):
		return LogOTLP
	case has("request_id") && has("call_type") && has("startTime") && (has("proxy_server_request") || has("messages")):
		return LogLiteLLM
	case langfuseRecord(keys) || langfuseDownload(keys):
		return LogLangfuse
	case has("data"):
		// The Langfuse API's page: {"data": [...], "meta": {...}}.
		var page []map[string]json.RawMessage
		if json.Unmarshal(keys["data"], &page) == nil && len(page) > 0 && langfuseRecord(page[0]) {
			return LogLangfuse
		}
	}
	return LogJSONL
}

// plainValues hands out the elements of a JSON array of request bodies, one a line.
type plainValues struct{ vs *valueStream }

func (p *plainValues) next() ([]byte, error) {
	v, err := p.vs.next()
	var tl *tooLongError
	if errors.As(err, &tl) {
		return skipLine(tl.Error()), nil
	}
	if err != nil {
		return nil, err
	}
	return compactLine(v), nil
}

func (p *plainValues) report() SourceReport { return SourceReport{} }

// compactLine returns v on one line (a pretty-printed element has newlines).
func compactLine(v []byte) []byte {
	if bytes.IndexByte(v, '\n') < 0 {
		return v
	}
	var buf bytes.Buffer
	if json.Compact(&buf, v) != nil {
		return skipLine("invalid JSON")
	}
	return buf.Bytes()
}

// tooLongError is a record longer than the limit; the stream goes on after it.
type tooLongError struct{ limit int }

func (e *tooLongError) Error() string {
	return fmt.Sprintf("%s of %d bytes: raise --max-line", ErrLineTooLong, e.limit)
}

// valueStream reads successive JSON values from r: the values of JSONL or of a file of
// concatenated documents, or the elements of one top-level array. A value longer than limit is
// skipped (a tooLongError) without holding more than limit bytes of it. Strings and brackets
// are followed, the rest is not validated: the caller decodes each value.
type valueStream struct {
	br      *bufio.Reader
	limit   int
	buf     []byte
	inArray bool // inside a top-level array
	started bool
	peeked  []byte
	hasPeek bool
	read    []byte // every byte read before rest() was asked, for replay
	keep    bool
	// cut says read stopped keeping bytes at the limit (the first value is too long).
	cut bool
}

func newValueStream(br *bufio.Reader, limit int) *valueStream {
	return &valueStream{br: br, limit: limit, keep: true}
}

// peek returns the first value without consuming it.
func (vs *valueStream) peek() ([]byte, error) {
	if !vs.hasPeek {
		v, err := vs.next()
		if err != nil {
			return nil, err
		}
		if !vs.keep {
			v = bytes.Clone(v) // vs.buf, which the next value overwrites
		}
		// Peeking keeps what it reads in vs.read (for rest), which v is a part of: the value
		// is held once.
		vs.peeked, vs.hasPeek = v, true
	}
	return vs.peeked, nil
}

// rest returns a reader of the log from its first byte: what was read to peek, then the rest.
func (vs *valueStream) rest() io.Reader {
	return io.MultiReader(bytes.NewReader(vs.read), vs.br)
}

func (vs *valueStream) readByte() (byte, error) {
	b, err := vs.br.ReadByte()
	if err == nil && vs.keep {
		if len(vs.read) > vs.limit {
			// Past the limit the value is too long to be used, and a line that long is
			// skipped by whoever reads rest: what is kept of it is bounded too.
			vs.cut = true
		} else {
			vs.read = append(vs.read, b)
		}
	}
	return b, err
}

// next returns the next value, io.EOF at the end. The bytes are valid until the next call.
func (vs *valueStream) next() ([]byte, error) {
	if vs.hasPeek {
		vs.hasPeek = false
		vs.keep, vs.read = false, nil
		return vs.peeked, nil
	}
	if vs.keep && vs.started {
		vs.keep, vs.read = false, nil
	}
	for {
		b, err := vs.readByte()
		if err != nil {
			if errors.Is(err, io.EOF) && vs.inArray {
				return nil, errors.New("the JSON array is cut short: the export did not finish (export again, or give its records as JSONL)")
			}
			return nil, err
		}
		switch b {
		case ' ', '\t', '\n', '\r', ',':
			continue
		case '[':
			if !vs.started {
				vs.started, vs.inArray = true, true
				continue
			}
		case ']':
			if vs.inArray {
				vs.inArray = false
				continue
			}
		}
		vs.started = true
		return vs.value(b)
	}
}

// value reads the rest of a value whose first byte is b. While peeking, the value is the part
// of vs.read it was read into, not a second copy.
func (vs *valueStream) value(b byte) ([]byte, error) {
	start := len(vs.read) - 1 // b's place in vs.read, when kept
	if !vs.keep {
		vs.buf = append(vs.buf[:0], b)
	}
	n := 1 // the value's length so far
	over := false
	add := func(c byte) {
		if over {
			return
		}
		if n >= vs.limit {
			over, vs.buf = true, vs.buf[:0]
			return
		}
		n++
		if !vs.keep {
			vs.buf = append(vs.buf, c)
		}
	}
	done := func() ([]byte, error) {
		if over {
			return nil, &tooLongError{limit: vs.limit}
		}
		if vs.keep {
			if vs.cut {
				return nil, &tooLongError{limit: vs.limit}
			}
			return vs.read[start : start+n], nil
		}
		return vs.buf, nil
	}
	if b != '{' && b != '[' && b != '"' {
		// A bare scalar: up to the next separator.
		for {
			c, err := vs.readByte()
			if err != nil || c == ',' || c == '\n' || c == ']' || c == ' ' {
				if err == nil && c == ']' && vs.inArray {
					vs.inArray = false
				}
				return done()
			}
			add(c)
		}
	}
	depth, inStr, esc := 0, false, false
	if b == '"' {
		inStr = true
	} else {
		depth = 1
	}
	for {
		c, err := vs.readByte()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil, errors.New("a record is cut short at the end: the export did not finish")
			}
			return nil, err
		}
		add(c)
		switch {
		case esc:
			esc = false
		case inStr && c == '\\':
			esc = true
		case c == '"':
			inStr = !inStr
			if !inStr && depth == 0 {
				return done()
			}
		case inStr:
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
			if depth == 0 {
				return done()
			}
		}
	}
}
