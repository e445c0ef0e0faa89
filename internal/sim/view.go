package sim

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/kvcheck/kvcheck/internal/audit"
)

// MaxViewBytes bounds the memory the request views of one request log may take (their text,
// message offsets and headers, viewBytes each): past it the views are dropped, the routers
// that read text cannot run on the log (they say so), and every other policy runs as before.
const MaxViewBytes = 1 << 30

// viewOverhead is what a View costs beyond its text, message offsets and headers: the struct
// and its pointer in Request; viewHeaderOverhead what one header costs beyond its name and
// value (a map entry of two string headers).
const (
	viewOverhead       = 192
	viewHeaderOverhead = 48
)

// newView is the request as a router reading its body sees it (View): its texts without the
// chat template (for a chat, each message's as audit.MessageText gives them), the headers and
// metadata.session_id the log kept, and LiteLLM's prompt_caching key. It runs after
// RequestLogOptions.Rewrite, so a rewritten request is seen rewritten.
func newView(req *audit.Request) *View {
	v := &View{Chat: req.Chat, Headers: req.Headers, MetadataSession: req.MetadataSession, Partition: req.Partition, SessionParams: req.SessionParams,
		PromptIDs: len(req.PromptIDs), BatchLeft: req.BatchLeft}
	if !req.Chat {
		v.Text = req.Prompt // a prompt of token ids has no text: ""
	} else {
		texts := viewTexts(req)
		n, pieces := 0, 0
		for _, t := range texts {
			pieces++
			for _, p := range t.Parts {
				n += len(p.Text)
				pieces++
			}
			if t.Reasoning != "" {
				n += len(t.Reasoning)
				pieces++
			}
		}
		var sb strings.Builder
		sb.Grow(n)
		v.Pieces = make([]Piece, 0, pieces)
		add := func(s string, k PieceKind) {
			sb.WriteString(s)
			v.Pieces = append(v.Pieces, Piece{End: int32(sb.Len()), Kind: k})
		}
		for _, t := range texts {
			switch t.Form {
			case audit.ContentString:
				s := ""
				if len(t.Parts) > 0 {
					s = t.Parts[0].Text
				}
				add(s, PieceString)
			case audit.ContentList:
				add("", PieceList)
				for _, p := range t.Parts {
					k := PiecePartOther
					if p.Typed {
						k = PiecePartText
					}
					add(p.Text, k)
				}
			case audit.ContentNull:
				add("", PieceNull)
			default:
				add("", PieceAbsent)
			}
			if t.Reasoning != "" {
				add(t.Reasoning, PieceReasoning)
			}
		}
		v.Text = sb.String()
		v.Roles = make([]string, len(req.Messages))
		for i, m := range req.Messages {
			v.Roles[i] = m.Role
		}
		for _, t := range texts {
			if t.Form == audit.ContentList {
				v.Lists = append(v.Lists, t.Raw)
			}
		}
	}
	v.CacheKey, v.CacheTokens = cacheKey(req)
	return v
}

// viewTexts is the request's messages as routers read them: audit's Texts, or where they are
// missing or out of step with the messages (a request built without them, or a Rewrite that
// dropped them), each message's Content as a string content.
func viewTexts(req *audit.Request) []audit.MessageText {
	if len(req.Texts) == len(req.Messages) {
		return req.Texts
	}
	texts := make([]audit.MessageText, len(req.Messages))
	for i, m := range req.Messages {
		texts[i] = audit.MessageText{Form: audit.ContentString, Parts: []audit.TextPart{{Text: m.Content, Typed: true}}}
	}
	return texts
}

// cacheKey is LiteLLM prompt_caching's key of a request: a hash of the messages up to and
// including the last one with an ephemeral cache_control marker (of that one, the content up
// to the marked part), their roles, and the tools; 0 when no message has a marker. The
// messages' marker positions are not part of it (LiteLLM hashes the messages as sent, markers
// included): two requests with the same prefix marked at different earlier places share a key
// here and not there. tokens is the prefix's estimated token count: its contents and tools at
// audit.BytesPerToken bytes a token.
func cacheKey(req *audit.Request) (key uint64, tokens int) {
	n := req.CacheMessages
	if !req.Chat || n <= 0 || n > len(req.Messages) {
		return 0, 0
	}
	h := uint64(14695981039346656037) // FNV-1a, with lengths so that no two splits collide
	bytes := 0
	add := func(s string) { h = fnvString(fnvUint(h, uint64(len(s))), s) }
	for i, m := range req.Messages[:n] {
		c := m.Content
		if i == n-1 && req.CacheCut > 0 && req.CacheCut < len(c) {
			c = c[:req.CacheCut]
		}
		add(m.Role)
		add(c)
		bytes += len(c)
	}
	add(req.Tools)
	bytes += len(req.Tools)
	key = mix64(h)
	if key == 0 {
		key = 1 // 0 means no key
	}
	return key, (bytes + audit.BytesPerToken - 1) / audit.BytesPerToken
}

func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

func fnvUint(h, x uint64) uint64 {
	for range 8 {
		h ^= x & 0xff
		h *= 1099511628211
		x >>= 8
	}
	return h
}

// viewBytes is what a View holds in memory.
func viewBytes(v *View) int64 {
	n := int64(viewOverhead + len(v.Text) + 8*len(v.Pieces) + len(v.MetadataSession) + len(v.Partition) + len(v.SessionParams))
	for _, l := range [][]string{v.Roles, v.Lists} {
		for _, x := range l {
			n += int64(16 + len(x))
		}
	}
	for k, val := range v.Headers {
		// Names and values are interned by the reader; counted each time all the same, so
		// the figure is an upper bound.
		n += int64(viewHeaderOverhead + len(k) + len(val))
	}
	return n
}

// keepView attaches the request's view, or drops every view once they pass MaxViewBytes. Once
// the views' texts pass MemViewBytes they go to the log's text file (textFile), those kept so
// far first.
func (l *requestLog) keepView(req *audit.Request, r *Request) {
	if l.viewsDropped {
		return
	}
	v := newView(req)
	l.viewBytes += viewBytes(v)
	if l.viewBytes > l.maxViewBytes() {
		l.dropViews(fmt.Sprintf("the request log's text passed %d MB at line %d, more than kvcheck keeps for the routers that read it (MaxViewBytes); simulate a part of the log with --max-requests", l.maxViewBytes()>>20, req.Line))
		return
	}
	r.View = v
	if l.texts == nil && !l.memOnly && l.viewBytes > l.memViewBytes() {
		f, err := newTextFile()
		if err != nil {
			// Kept in memory, as a log under MemViewBytes is (up to MaxViewBytes).
			l.memOnly = true
			return
		}
		l.texts = f
		for i := range l.t.Requests {
			if err == nil && l.t.Requests[i].View != nil {
				err = f.put(l.t.Requests[i].View)
			}
		}
		if err != nil {
			l.dropViews(err.Error())
		}
		return
	}
	if l.texts != nil {
		if err := l.texts.put(v); err != nil {
			l.dropViews(err.Error())
		}
	}
}

// dropViews drops every view, saying why.
func (l *requestLog) dropViews(why string) {
	l.viewsDropped = true
	for i := range l.t.Requests {
		l.t.Requests[i].View = nil
	}
	l.t.noView = why
	if l.texts != nil {
		l.texts.close()
		l.texts = nil
	}
}

// doneViews ends the writing of the views' texts: they are read back from here on.
func (l *requestLog) doneViews() {
	if l.texts == nil {
		return
	}
	if err := l.texts.w.Flush(); err != nil {
		l.dropViews(fmt.Sprintf("the request log's text could not be kept for the routers that read it: %v", err))
		return
	}
	// The file is closed when no view refers to it any more (os.File's own cleanup), and
	// goes with the process at the latest: it is unlinked.
	l.texts.w = nil
}

func (l *requestLog) memViewBytes() int64 {
	if l.opts.memViewBytes > 0 {
		return l.opts.memViewBytes
	}
	return MemViewBytes
}

// MemViewBytes is how much of a request log's text the views keep in memory: past it every
// view's text goes to a temporary file, removed as soon as it is made (so no exit leaves it
// behind), and a replay of a router that reads text reads each request's back as it routes it
// (from the page cache: the file is written once, just before). Memory then holds the views'
// other fields (viewOverhead, the message offsets and headers) and, for a replay, the router's
// own tree; the log's text is bounded by MaxViewBytes on disk. Where no temporary file can be
// made the texts stay in memory.
const MemViewBytes = 64 << 20

// textFile is a temporary file holding the texts of a request log's views, one after another.
type textFile struct {
	f    *os.File
	w    *bufio.Writer // nil once written
	size int64
}

func newTextFile() (*textFile, error) {
	f, err := os.CreateTemp("", "kvcheck-texts-*")
	if err != nil {
		return nil, err
	}
	// Unlinked at once: read through the descriptor (where an open file cannot be removed,
	// Windows, it stays until the OS's temporary files are cleaned).
	_ = os.Remove(f.Name())
	return &textFile{f: f, w: bufio.NewWriterSize(f, 1<<20)}, nil
}

// put moves v's text to the file.
func (tf *textFile) put(v *View) error {
	if _, err := tf.w.WriteString(v.Text); err != nil {
		return fmt.Errorf("the request log's text could not be kept for the routers that read it: %v", err)
	}
	v.Stored = &StoredText{file: tf, at: tf.size, size: len(v.Text)}
	tf.size += int64(len(v.Text))
	v.Text = ""
	return nil
}

func (tf *textFile) close() { _ = tf.f.Close() }

// withText returns v with its text, read back from its file into buf when it was moved there
// (v itself otherwise).
func (v *View) withText(into *View, buf *[]byte) (*View, error) {
	if v == nil || v.Stored == nil {
		return v, nil
	}
	st := v.Stored
	if cap(*buf) < st.size {
		*buf = make([]byte, st.size)
	}
	b := (*buf)[:st.size]
	if _, err := st.file.f.ReadAt(b, st.at); err != nil && err != io.EOF {
		return nil, fmt.Errorf("reading back a request's text: %w", err)
	}
	*into = *v
	into.Text, into.Stored, into.From = string(b), nil, st
	return into, nil
}

func (l *requestLog) maxViewBytes() int64 {
	if l.opts.maxViewBytes > 0 {
		return l.opts.maxViewBytes
	}
	return MaxViewBytes
}
