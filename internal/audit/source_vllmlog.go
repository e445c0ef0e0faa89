package audit

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// vLLM's own request log (vllm/entrypoints/logger.py, RequestLogger.log_inputs): with
// --enable-log-requests the server logs each request as it arrives. Until about v0.10 one INFO
// line held everything:
//
//	INFO 04-10 03:35:45 [logger.py:39] Received request chatcmpl-b65...: prompt: '<|im_start|>system\n...', params: SamplingParams(n=1, ..., max_tokens=32742, ...), prompt_token_ids: None, lora_request: None, prompt_adapter_request: None.
//
// (earlier still "sampling_params:" for "params:"). Newer versions log the prompt only at DEBUG
// level (VLLM_LOGGING_LEVEL=DEBUG), on a line of its own before the INFO line:
//
//	DEBUG 02-13 11:33:33 [logger.py:40] Request chatcmpl-a26... details: prompt: '...', prompt_token_ids: [151644, ...], prompt_embeds shape: None.
//	INFO 02-13 11:33:33 [logger.py:49] Received request chatcmpl-a26...: params: SamplingParams(...), lora_request: None.
//
// The prompt is the rendered one (the chat template applied), as Python's repr; its token ids,
// when logged, are what the engine hashes, so they are used as they are. --max-log-len cuts
// both to that many characters or ids. The log has no session: a prompt that begins with an
// earlier request's whole prompt (the next turn of a chat repeats the conversation so far)
// continues that request's conversation. Times are the line's, to the second (the log's
// prefix has no year: a month that goes back is taken as the next year).

var (
	vllmPrefixTime = regexp.MustCompile(`(?:DEBUG|INFO|WARNING|ERROR)\s+(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?`)
	vllmISOTime    = regexp.MustCompile(`^\s*(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?)`)
	vllmMaxTokens  = regexp.MustCompile(`\bmax_tokens=(\d+)`)
	vllmN          = regexp.MustCompile(`\bn=(\d+)`)
)

// maxPendingPrompts bounds the prompts of the newer log waiting for their INFO line.
const maxPendingPrompts = 4096

// vllmTurnOn is what to turn on for vLLM to log prompts.
const vllmTurnOn = "start vLLM with --enable-log-requests and, on versions that log prompts only at debug level, VLLM_LOGGING_LEVEL=DEBUG; leave --max-log-len unset (it cuts prompts)"

type vllmPrompt struct {
	id      string
	prompt  string
	hasText bool
	ids     []uint32
	at      string
}

type vllmLog struct {
	br      *bufio.Reader
	maxLine int
	buf     []byte
	line    int64
	queue   [][]byte

	pending map[string]*vllmPrompt
	order   []string

	year      int
	lastMonth int

	conv      *renderedConversations
	requests  int64
	noPrompt  int64
	fromIDs   int64
	withTime  int64
	continued int64
	tooLong   int64
	bad       int64

	longest, atLongest int64
	longestFirst       uint64
	longestDiffer      bool
	longestUnit        string
}

func newVLLMLog(br *bufio.Reader, maxLine int) *vllmLog {
	return &vllmLog{br: br, maxLine: maxLine, pending: map[string]*vllmPrompt{}, year: 2000, conv: newRenderedConversations(1 << 20)}
}

func (c *vllmLog) next() ([]byte, error) {
	for {
		if len(c.queue) > 0 {
			line := c.queue[0]
			c.queue = c.queue[1:]
			return line, nil
		}
		line, err := c.readLine()
		if errors.Is(err, io.EOF) {
			for _, id := range c.order {
				if p := c.pending[id]; p != nil {
					c.queue = append(c.queue, c.emit(p, ""))
				}
			}
			c.order, c.pending = nil, map[string]*vllmPrompt{}
			if len(c.queue) > 0 {
				continue
			}
			switch {
			case c.requests == 0 && c.noPrompt > 0:
				return nil, fmt.Errorf("%d requests logged without their prompts: %s", c.noPrompt, vllmTurnOn)
			case c.requests == 0:
				return nil, fmt.Errorf("%d lines and no request (\"Received request ...\"): not a vLLM log with its requests, or a JSON request log cut at its first line; for vLLM, %s", c.line, vllmTurnOn)
			}
			return nil, io.EOF
		}
		if err != nil {
			var tl *tooLongError
			if errors.As(err, &tl) {
				c.tooLong++
				return skipLine(fmt.Sprintf("log line %d: %v", c.line, tl)), nil
			}
			return nil, err
		}
		if out := c.parse(line); out != nil {
			return out, nil
		}
	}
}

// readLine returns the next line, or a tooLongError for one past the limit (skipped whole).
func (c *vllmLog) readLine() ([]byte, error) {
	c.buf = c.buf[:0]
	over := false
	for {
		chunk, err := c.br.ReadSlice('\n')
		if !over {
			if len(c.buf)+len(chunk) > c.maxLine+1 {
				over, c.buf = true, c.buf[:0]
			} else {
				c.buf = append(c.buf, chunk...)
			}
		}
		switch {
		case err == nil:
			c.line++
			if over {
				return nil, &tooLongError{limit: c.maxLine}
			}
			return bytes.TrimRight(c.buf, "\r\n"), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(c.buf) == 0 && !over {
				return nil, io.EOF
			}
			c.line++
			if over {
				return nil, &tooLongError{limit: c.maxLine}
			}
			return c.buf, nil
		default:
			return nil, err
		}
	}
}

// parse reads one log line: a request line gives a request line out (or, for the newer log's
// DEBUG line, waits for its INFO line); other lines give nothing.
func (c *vllmLog) parse(line []byte) []byte {
	s := string(line)
	if i := strings.Index(s, "Request "); i >= 0 {
		if j := strings.Index(s[i:], " details: prompt: "); j > 0 && !strings.Contains(s[i+8:i+j], " ") {
			id := s[i+8 : i+j]
			p, ok := parseVLLMPrompt(s[i+j+len(" details: "):])
			if !ok {
				c.bad++
				return skipLine(fmt.Sprintf("log line %d: request %s: the prompt does not parse", c.line, id))
			}
			p.id, p.at = id, c.time(s[:i])
			if len(c.pending) >= maxPendingPrompts {
				old := c.order[0]
				c.order = c.order[1:]
				if q := c.pending[old]; q != nil {
					delete(c.pending, old)
					c.queue = append(c.queue, c.emit(q, ""))
				}
			}
			c.pending[id] = &p
			c.order = append(c.order, id)
			return nil
		}
	}
	i := strings.Index(s, "Received request ")
	if i < 0 {
		return nil
	}
	rest := s[i+len("Received request "):]
	colon := strings.Index(rest, ": ")
	if colon <= 0 {
		return nil
	}
	id, rest := rest[:colon], rest[colon+2:]
	at := c.time(s[:i])
	if p := c.pending[id]; p != nil {
		delete(c.pending, id)
		for k, o := range c.order {
			if o == id {
				c.order = append(c.order[:k], c.order[k+1:]...)
				break
			}
		}
		return c.emit(p, rest)
	}
	if !strings.HasPrefix(rest, "prompt: ") {
		// The newer INFO line, whose prompt was not logged (INFO level).
		c.noPrompt++
		return skipLine(fmt.Sprintf("log line %d: request %s was logged without its prompt: %s", c.line, id, vllmTurnOn))
	}
	p, ok := parseVLLMPrompt(rest)
	if !ok {
		c.bad++
		return skipLine(fmt.Sprintf("log line %d: request %s: the prompt does not parse", c.line, id))
	}
	p.id, p.at = id, at
	return c.emit(&p, rest)
}

// parseVLLMPrompt reads `prompt: <repr>, ... prompt_token_ids: <list or None>` from s.
func parseVLLMPrompt(s string) (vllmPrompt, bool) {
	var p vllmPrompt
	rest, ok := strings.CutPrefix(s, "prompt: ")
	if !ok {
		return p, false
	}
	if after, none := strings.CutPrefix(rest, "None"); none {
		rest = after
	} else {
		text, n, ok := pyRepr(rest)
		if !ok {
			return p, false
		}
		p.prompt, p.hasText, rest = text, true, rest[n:]
	}
	if i := strings.Index(rest, "prompt_token_ids: ["); i >= 0 {
		list := rest[i+len("prompt_token_ids: ["):]
		end := strings.IndexByte(list, ']')
		if end < 0 {
			return p, false
		}
		for _, f := range strings.Split(list[:end], ",") {
			f = strings.TrimSpace(f)
			if f == "" {
				continue
			}
			v, err := strconv.ParseUint(f, 10, 32)
			if err != nil {
				return p, false
			}
			p.ids = append(p.ids, uint32(v))
		}
	}
	return p, p.hasText || len(p.ids) > 0
}

// pyString reads a Python str repr at the start of s and returns its text and length.
func pyRepr(s string) (string, int, bool) {
	if len(s) < 2 || (s[0] != '\'' && s[0] != '"') {
		return "", 0, false
	}
	q := s[0]
	var sb strings.Builder
	for i := 1; i < len(s); {
		c := s[i]
		switch {
		case c == q:
			return sb.String(), i + 1, true
		case c != '\\':
			_, size := utf8.DecodeRuneInString(s[i:])
			sb.WriteString(s[i : i+size])
			i += size
			continue
		}
		if i+1 >= len(s) {
			return "", 0, false
		}
		e := s[i+1]
		i += 2
		switch e {
		case 'n':
			sb.WriteByte('\n')
		case 't':
			sb.WriteByte('\t')
		case 'r':
			sb.WriteByte('\r')
		case '\\', '\'', '"':
			sb.WriteByte(e)
		case 'a':
			sb.WriteByte('\a')
		case 'b':
			sb.WriteByte('\b')
		case 'f':
			sb.WriteByte('\f')
		case 'v':
			sb.WriteByte('\v')
		case '0':
			sb.WriteByte(0)
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if i+n > len(s) {
				return "", 0, false
			}
			v, err := strconv.ParseUint(s[i:i+n], 16, 32)
			if err != nil || v > utf8.MaxRune {
				return "", 0, false
			}
			sb.WriteRune(rune(v))
			i += n
		default:
			sb.WriteByte('\\')
			sb.WriteByte(e)
		}
	}
	return "", 0, false
}

// time reads the time of a line from its prefix, as RFC 3339 text ("" when it has none).
func (c *vllmLog) time(prefix string) string {
	if m := vllmISOTime.FindStringSubmatch(prefix); m != nil {
		t := strings.Replace(strings.Replace(m[1], ",", ".", 1), " ", "T", 1)
		if ts, err := time.Parse("2006-01-02T15:04:05.999999999", t); err == nil {
			return ts.UTC().Format(time.RFC3339Nano)
		}
	}
	m := vllmPrefixTime.FindStringSubmatch(prefix)
	if m == nil {
		return ""
	}
	month, _ := strconv.Atoi(m[1])
	if month < c.lastMonth {
		c.year++
	}
	c.lastMonth = month
	frac := ""
	if m[6] != "" {
		frac = "." + m[6]
	}
	ts, err := time.Parse("2006-01-02T15:04:05.999999999", fmt.Sprintf("%04d-%s-%sT%s:%s:%s%s", c.year, m[1], m[2], m[3], m[4], m[5], frac))
	if err != nil {
		return ""
	}
	return ts.UTC().Format(time.RFC3339Nano)
}

// emit makes the request line of a prompt, with the max_tokens and n of its params.
func (c *vllmLog) emit(p *vllmPrompt, params string) []byte {
	c.requests++
	body := map[string]any{}
	var units []byte
	unit := "characters"
	if len(p.ids) > 0 {
		body["prompt"] = p.ids
		c.fromIDs++
		units = make([]byte, 0, 4*len(p.ids))
		for _, id := range p.ids {
			units = binary.LittleEndian.AppendUint32(units, id)
		}
		unit = "token ids"
	} else {
		body["prompt"] = p.prompt
		units = []byte(p.prompt)
	}
	if m := vllmMaxTokens.FindStringSubmatch(params); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil {
			body["max_tokens"] = n
		}
	}
	if m := vllmN.FindStringSubmatch(params); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil && n > 1 {
			body["n"] = n
		}
	}
	step := 1
	if unit == "token ids" {
		step = 4
	}
	sess, cont := c.conv.session(units, step)
	if cont {
		c.continued++
	}
	c.watchLength(units, step, unit)
	rec := record{Body: body, SessionID: sess, Where: "request " + p.id}
	if p.at != "" {
		rec.Timestamp = p.at
		c.withTime++
	}
	return rec.line()
}

// watchLength keeps the longest prompt's length and whether several different prompts have it:
// the mark of --max-log-len.
func (c *vllmLog) watchLength(units []byte, step int, unit string) {
	n := int64(len(units) / step)
	h := maphash.Bytes(c.conv.seed, units)
	switch {
	case n > c.longest:
		c.longest, c.atLongest, c.longestFirst, c.longestDiffer, c.longestUnit = n, 1, h, false, unit
	case n == c.longest:
		c.atLongest++
		if h != c.longestFirst {
			c.longestDiffer = true
		}
	}
}

func (c *vllmLog) report() SourceReport {
	var rep SourceReport
	if c.longestDiffer && c.atLongest >= 2 {
		rep.Lossy = append(rep.Lossy, fmt.Sprintf("%d different prompts are exactly %d %s long, the longest in the log: vLLM cut them at --max-log-len %d, so what they share past it is not seen and prompts that differ only after it look alike; restart vLLM without --max-log-len", c.atLongest, c.longest, c.longestUnit, c.longest))
	}
	if c.noPrompt > 0 && c.requests > 0 {
		rep.Lossy = append(rep.Lossy, fmt.Sprintf("%d requests were logged without their prompts (%s)", c.noPrompt, vllmTurnOn))
	}
	tokens := "the rendered prompt text (chat template applied)"
	if c.fromIDs == c.requests {
		tokens = "the logged token ids, as the engine hashes them"
	} else if c.fromIDs > 0 {
		tokens = fmt.Sprintf("the logged token ids (%d), else the rendered prompt text", c.fromIDs)
	}
	rep.Notes = append(rep.Notes, fmt.Sprintf("requests from %d \"Received request\" lines: prompts from %s; sessions: none logged, grouped by conversation (%d requests begin with an earlier request's whole prompt); arrivals from the lines' times (%d, to the second; vLLM logs no year)", c.requests, tokens, c.continued, c.withTime))
	return rep
}

// renderedConversations groups rendered prompts into conversations: a prompt that begins with
// an earlier prompt (the next turn of a chat repeats the conversation so far, with the reply and
// the new message after it) continues that prompt's conversation. The earlier prompt must end
// where the new one repeats its own ending (both end with the template's generation prompt,
// "<|im_start|>assistant\n" say), so only those places are looked up. It remembers at most max
// prompts (a hash and a conversation each).
type renderedConversations struct {
	seed  maphash.Seed
	ends  map[uint64]string
	max   int
	count int
}

func newRenderedConversations(max int) *renderedConversations {
	return &renderedConversations{seed: maphash.MakeSeed(), ends: map[uint64]string{}, max: max}
}

// session returns the conversation of the prompt units (step bytes a unit) and whether it
// continues an earlier one.
func (r *renderedConversations) session(units []byte, step int) (string, bool) {
	// The ending looked for: 8 bytes of text, or 2 token ids.
	k := 8
	if step > 1 {
		k = 2 * step
	}
	found := ""
	if len(units) > k {
		end := units[len(units)-k:]
		for from := 0; ; {
			i := bytes.Index(units[from:len(units)-1], end)
			if i < 0 {
				break
			}
			cut := from + i + len(end)
			if cut%step == 0 {
				if s, ok := r.ends[maphash.Bytes(r.seed, units[:cut])]; ok {
					found = s // the longest earlier prompt wins: keep looking
				}
			}
			from += i + 1
			if from >= len(units)-1 {
				break
			}
		}
	}
	cont := found != ""
	if !cont {
		r.count++
		found = "vllm-conversation-" + strconv.Itoa(r.count)
	}
	if len(r.ends) < r.max {
		r.ends[maphash.Bytes(r.seed, units)] = found
	}
	return found, cont
}
