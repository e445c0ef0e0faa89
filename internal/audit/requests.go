package audit

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/kvcheck/kvcheck/internal/finding"
)

// Defaults for the request audit's bounds.
const (
	DefaultBlockSize = 16
	// DefaultMaxBlocks bounds the prefix index and, apart, the (session, block) pairs that
	// split reuse by session: about 24 bytes an entry in each, so at 4M the two hold about
	// 200 MB together however long the input.
	DefaultMaxBlocks = 4_000_000
	// maxSamples bounds the block texts kept to explain divergences (one block of estimated
	// text each: 64 bytes at block size 16, so about 25 MB with the map).
	maxSamples = 250_000
	// maxSites bounds the distinct divergence sites reported.
	maxSites = 2_000
	// maxLineErrors is how many bad lines are quoted; the rest are only counted.
	maxLineErrors = 5
)

// RequestOptions configures AuditRequests.
type RequestOptions struct {
	// BlockSize is the engine's block size in tokens (DefaultBlockSize when 0).
	BlockSize int
	// MaxBlocks bounds the prefix index (DefaultMaxBlocks when 0). When it is full, new blocks
	// are no longer indexed and the reuse figures become lower bounds (Summary.Capped).
	MaxBlocks int
	// Tokenizer gives the token ids (Estimator when nil).
	Tokenizer Tokenizer
	// Concurrency bounds the tokenize calls in flight for an exact tokenizer (default 8).
	Concurrency int
	// MaxLine is the longest accepted line (DefaultMaxLine when 0).
	MaxLine int
	// Progress, when set, is called after every 10,000 requests with the count so far.
	Progress func(requests int64)
}

// Summary is what the request audit found over one request set. Token figures are estimated
// unless Exact is true.
type Summary struct {
	Exact     bool
	BlockSize int
	// Interrupted says the input was not read to its end: the figures cover Requests only.
	Interrupted bool
	// BodyKey is where a gateway export held the request body ("" for plain bodies).
	BodyKey string

	Requests, Chat, Completion int64
	// Short counts requests shorter than one block: nothing of them can be cached.
	Short int64
	// Batches counts requests whose prompt was a batch of several, BatchLeft the prompts of
	// those batches after the first, which were not audited.
	Batches, BatchLeft int64
	// Skipped counts unusable lines; LineErrors quotes the first few.
	Skipped    int64
	LineErrors []string

	PromptTokens int64
	// CacheableTokens is the prompt tokens an unbounded prefix cache shared by every replica
	// would serve from cache, in order of arrival (the last token of a prompt never is).
	CacheableTokens int64
	// CrossSessionTokens and WithinSessionTokens split CacheableTokens by whether the request's
	// own session had already computed the block (session affinity is enough) or only other
	// sessions had (a KV-aware router helps). A chat request without a session id is given
	// the session of the earlier request whose conversation it continues (InferredSessions);
	// a completion without one counts every hit as cross-session.
	CrossSessionTokens, WithinSessionTokens int64
	// Sessions counts the distinct sessions, up to the session table's bound (MaxBlocks):
	// SessionsCapped says it was reached, and Sessions is then a lower bound, since a session
	// first seen past it cannot be told from one seen before; UntrackedRequests counts the
	// requests of sessions that were not tracked.
	Sessions          int64
	SessionsCapped    bool
	UntrackedRequests int64
	// InferredSessions counts the sessions (of Sessions) found without an id: a chat request
	// whose messages continue an earlier request's whole conversation (turn k+1 repeats turn
	// k's messages) joins that request's session.
	InferredSessions int64
	// RepeatedSessions counts the sessions (of Sessions) that hold two requests or more: a
	// request without an id whose conversation nobody continues is a session of one.
	RepeatedSessions int64
	// FollowUps counts requests of a session seen before (later turns); FollowUpCacheable of
	// their FollowUpTokens were served from cache; FollowUpFirstBlockChanged counts those whose
	// first block differs from their session's previous request, so that even session affinity
	// cannot help them.
	FollowUps, FollowUpTokens, FollowUpCacheable int64
	FollowUpFirstBlockChanged                    int64

	// UniqueFirstBlock counts requests (of at least one block) whose first block no other
	// request shares.
	UniqueFirstBlock int64
	// SharedPrefix is the distribution of the reusable prefix per request, in blocks.
	SharedPrefix []Bucket
	// Sites are where requests first diverged from earlier ones, most frequent first.
	Sites []Site

	CacheControlRequests, CacheControlLast int64
	// Source is what a log in another project's format (LiteLLM's spend logs, a Langfuse export,
	// OpenTelemetry spans, vLLM's log) lost and how its fields were read; nil for JSONL.
	Source *SourceReport `json:"-"`
	// Capped is true when the prefix index reached MaxBlocks; UnindexedBlocks were not indexed.
	Capped          bool
	UnindexedBlocks int64
}

// Bucket is one bar of a distribution: requests whose value lies in [Min, Max] (Max -1 means
// no upper bound).
type Bucket struct {
	Min, Max int
	Requests int64
}

// Site is a place where requests leave the shared prefix: the message, the character offset in
// it, the block, and the likely cause judged from the text there.
type Site struct {
	Message int // -1 for the tools preamble
	Role    string
	Offset  int
	Block   int
	Cause   string
	Count   int64
	// Example is the text at the divergence in the first request seen there, Other the text
	// the earlier request had, and Line the example's input line.
	Example, Other string
	Line           int64
}

// Findings turns the summary into findings.
func (s *Summary) Findings(subject string) []Finding {
	var out []Finding
	est := !s.Exact
	approx := ""
	if est {
		approx = " (estimated)"
	}
	add := func(sev finding.Severity, code, msg, fix string) *Finding {
		out = append(out, Finding{Finding: finding.Finding{Severity: sev, Code: code, Message: msg, Subject: subject, File: subject, Fix: fix},
			Estimated: est, Block: -1, Frequency: Unknown, Evidence: EvidenceLog})
		return &out[len(out)-1]
	}
	if src := s.Source; src != nil {
		for _, l := range src.Lossy {
			add(finding.Warning, "audit/source-lossy", src.Format.Title()+": "+l, "see the README's \"Request logs from where gateways keep them\" for what to turn on")
		}
		if len(src.Notes) > 0 {
			add(finding.Info, "audit/source", src.Format.Title()+": "+strings.Join(src.Notes, "; "), "")
		}
	}
	if s.Interrupted {
		add(finding.Error, "audit/interrupted", fmt.Sprintf("partial: the audit was interrupted after %d requests; every figure covers those only", s.Requests), "run it again to the end of the log")
	}
	// at fills a finding's position from the site where requests diverge.
	at := func(f *Finding, st Site, p Position) {
		f.Block, f.Position, f.Expression, f.Line = st.Block, p, st.Example, int(st.Line)
		f.TokensBefore = st.Block * s.BlockSize
		switch st.Cause {
		case "date/time":
			f.Kind = KindDate
		case "uuid", "id":
			f.Kind = KindID
		default:
			f.Kind = KindVariable
		}
	}
	withBlock := s.Requests - s.Short
	if withBlock > 0 && s.UniqueFirstBlock > 0 {
		frac := float64(s.UniqueFirstBlock) / float64(withBlock)
		sev := finding.Info
		switch {
		case frac >= 0.5:
			sev = finding.Error
		case frac >= 0.1:
			sev = finding.Warning
		}
		msg := fmt.Sprintf("%.1f%% of requests have a first block no other request shares: their chain breaks at block 0%s", frac*100, approx)
		var site *Site
		if len(s.Sites) > 0 && s.Sites[0].Block == 0 {
			site = &s.Sites[0]
			msg += fmt.Sprintf("; most often at %s, offset %d (%s, e.g. %q)", site.Where(), site.Offset, site.Cause, site.Example)
		}
		fix := "move per-request values (dates, ids, user data) out of the start of the prompt: to the end, a later message or a tool result"
		if site != nil && userText(*site) {
			// The prompt opens with what the user typed: nothing generated breaks a shared
			// prefix, there is just none to share. Only later turns of a conversation can reuse.
			sev = finding.Info
			msg += ": the prompts start with the user's own text, so there is no shared prefix to break"
			fix = "nothing to fix in the prompt builder; a shared system prompt placed first would be cached once per replica, and later turns of a conversation reuse their own prefix"
		}
		f := add(sev, "audit/unique-first-block", msg, fix)
		f.Position, f.Block = Breaker, 0
		if site != nil {
			at(f, *site, Breaker)
		}
	}
	if len(s.Sites) > 0 && withBlock > 0 {
		// Where most requests leave the shared prefix early, in the first message or the
		// tools, on a value that looks generated, the prompt builder is the cause.
		st := s.Sites[0]
		share := float64(st.Count) / float64(withBlock)
		if st.Block > 0 && st.Block <= 3 && st.Message <= 0 && share >= 0.1 && !orderCause(st.Cause) {
			sev := finding.Warning
			// Plain text and bare token ids do not say the value was generated.
			if share >= 0.5 && st.Cause != "text" && st.Cause != "token ids" {
				sev = finding.Error
			}
			f := add(sev, "audit/early-divergence",
				fmt.Sprintf("%.1f%% of requests leave the shared prefix at %s, offset %d, block %d%s: %s (e.g. %q where an earlier request had %q)",
					share*100, st.Where(), st.Offset, st.Block, approx, st.Cause, st.Example, st.Other),
				"move the changing value out of the first message: to the end of the prompt, the last user message or a tool result")
			at(f, st, Early)
		}
	}
	if withBlock > 0 {
		// Requests that left the prefix where the same tools or JSON came in another order.
		var n int64
		var first *Site
		for i := range s.Sites {
			if orderCause(s.Sites[i].Cause) {
				n += s.Sites[i].Count
				if first == nil {
					first = &s.Sites[i]
				}
			}
		}
		if first != nil {
			share := float64(n) / float64(withBlock)
			sev := finding.Warning
			if share >= 0.5 {
				sev = finding.Error
			}
			f := add(sev, "audit/unstable-order",
				fmt.Sprintf("%.1f%% of requests (%d) leave the shared prefix where an earlier request had the same content in another order (%s at %s, offset %d, block %d%s, e.g. %q where an earlier request had %q): the engine hashes bytes, so a reordered tool list or JSON object breaks the prefix there as surely as a timestamp",
					share*100, n, first.Cause, first.Where(), first.Offset, first.Block, approx, first.Example, first.Other),
				"serialise deterministically: keep the tool list in one fixed order and JSON keys sorted (json.dumps(..., sort_keys=True)); the model sees the same content and the prefix stays shared")
			at(f, *first, Early)
			if first.Block == 0 {
				f.Position = Breaker
			}
		}
	}
	if s.FollowUps > 0 && s.FollowUpFirstBlockChanged > 0 {
		share := float64(s.FollowUpFirstBlockChanged) / float64(s.FollowUps)
		sev := finding.Info
		switch {
		case share >= 0.5:
			sev = finding.Error
		case share >= 0.1:
			sev = finding.Warning
		}
		f := add(sev, "audit/session-first-block",
			fmt.Sprintf("in %.1f%% of later turns the first block differs from the same session's previous request%s: not even session affinity can reuse their prefix", share*100, approx),
			"keep the start of the prompt identical across the turns of a session; put per-call values at the end")
		f.Position, f.Block = Breaker, 0
	}
	if s.CacheControlLast > 0 {
		add(finding.Warning, "audit/cache-control-last",
			fmt.Sprintf("%d requests carry a cache_control marker on the last message: LiteLLM's prompt_caching pins by the prefix up to the last marker, so these never hit", s.CacheControlLast),
			"put cache_control on the last message of the shared prefix (the system prompt or the last stable turn), not on the newest message")
	}
	if s.Batches > 0 {
		add(finding.Info, "audit/batch-prompts", fmt.Sprintf("%d requests were batches of prompts (\"prompt\": [...]); the first prompt of each was audited and %d more prompts were not, though the engine runs each as a request of its own and a batch's prompts often share their start: the reuse figures leave them out", s.Batches, s.BatchLeft),
			"log one request per prompt (as the engine sees them) to audit them all")
	}
	if s.Skipped > 0 {
		skipped := fmt.Sprintf("%d lines were not usable requests and were skipped", s.Skipped)
		if s.Skipped == 1 {
			skipped = "1 line was not a usable request and was skipped"
		}
		add(finding.Warning, "audit/skipped-lines", fmt.Sprintf("%s (first: %s)", skipped, JoinLineErrors(s.LineErrors)), "check the log format: one JSON request body or export record per line")
	}
	if s.SessionsCapped {
		add(finding.Warning, "audit/sessions-full", fmt.Sprintf("the session table reached its bound of %d sessions; %d later requests of sessions not seen before were not told apart, so the session count is a lower bound and their later turns were not counted as follow-ups", s.Sessions, s.UntrackedRequests), "raise --max-blocks (the session table's bound too, about 50 bytes a session)")
	}
	if s.Capped {
		add(finding.Warning, "audit/index-full", fmt.Sprintf("the prefix index reached its bound; %d later blocks (or session-block pairs) were not indexed, so reuse figures, and the within-session share, are lower bounds", s.UnindexedBlocks), "raise --max-blocks (at most 16 bytes a block, 11 a session-block pair)")
	}
	return out
}

// orderCause reports whether a divergence cause is a reordering.
func orderCause(c string) bool {
	return c == CauseToolOrder || c == CauseKeyOrder || c == CauseListOrder
}

// Where names the site's message for people.
func (st Site) Where() string {
	if st.Message < 0 {
		return "the tools"
	}
	return fmt.Sprintf("message %d (%s)", st.Message, st.Role)
}

// chain is a prefix index over block chains: a block is known by the hash of its tokens and its
// parent's hash, as in vLLM, so a flat map is the trie.
type chain struct {
	bs   int
	max  int
	seed maphash.Seed
	// nodes holds each block's node: how many requests reached it (saturating at 2^31-1)
	// and, in depth0Bit, whether it is a first block.
	nodes *blockTable
	// touched holds a key per (session, block) pair seen: a hit on a block its own session
	// has already computed is one session affinity serves, whoever stored the block first.
	touched *blockTable
	buf     []byte
}

// depth0Bit marks a first block's node in chain.nodes; the bits below it count.
const depth0Bit = 1 << 31

// walk is what one request's pass over a chain found: its full blocks, the leading hits (split
// by who stored them), and the block where it left the indexed prefix (-1 if it never did).
type walk struct {
	blocks, hits  int
	cross, within int
	divBlock      int
}

func newChain(bs, max int, seed maphash.Seed) *chain {
	return &chain{bs: bs, max: max, seed: seed, nodes: newBlockTable(max, false), touched: newBlockTable(max, true), buf: make([]byte, 0, 8+4*bs)}
}

func (c *chain) hash(parent uint64, ids []uint32) uint64 {
	c.buf = binary.LittleEndian.AppendUint64(c.buf[:0], parent)
	for _, id := range ids {
		c.buf = binary.LittleEndian.AppendUint32(c.buf, id)
	}
	return maphash.Bytes(c.seed, c.buf)
}

// add walks ids block by block: leading blocks already indexed are hits, the rest are stored.
// onNew, when set, is called for each block stored, with its index and its parent's hash.
func (c *chain) add(ids []uint32, session uint64, unindexed *int64, onNew func(i int, parent uint64)) walk {
	w := walk{blocks: len(ids) / c.bs, divBlock: -1}
	// The last token is always recomputed, so a prompt of exactly k blocks can hit k-1.
	maxHits := 0
	if len(ids) > 0 {
		maxHits = (len(ids) - 1) / c.bs
	}
	var parent uint64
	matching := true
	for i := range w.blocks {
		h := c.hash(parent, ids[i*c.bs:(i+1)*c.bs])
		if matching {
			if n, ok := c.nodes.get(h); ok {
				if n&^depth0Bit < depth0Bit-1 {
					c.nodes.put(h, n+1)
				}
				if w.hits < maxHits {
					w.hits++
					if c.touch(h, session, unindexed) {
						w.within++
					} else {
						w.cross++
					}
				} else {
					c.touch(h, session, unindexed)
				}
				parent = h
				continue
			}
			matching = false
			w.divBlock = i
		}
		if c.nodes.len() >= c.max {
			*unindexed += int64(w.blocks - i)
			break
		}
		n := uint32(1)
		if i == 0 {
			n |= depth0Bit
		}
		c.nodes.put(h, n)
		c.touch(h, session, unindexed)
		if onNew != nil {
			onNew(i, parent)
		}
		parent = h
	}
	return w
}

// touch records that session has the block h and reports whether it had it before. Without a
// session it reports false: every hit then counts as cross-session. Past the bound the pair is
// not recorded and counted as unindexed, so later hits on it count as cross-session.
func (c *chain) touch(h, session uint64, unindexed *int64) bool {
	if session == 0 {
		return false
	}
	// Mixing the session in by multiplication keeps (session, block) keys apart for sessions
	// that share blocks.
	k := h ^ session*0x9e3779b97f4a7c15
	if _, ok := c.touched.get(k); ok {
		return true
	}
	if c.touched.len() >= c.max {
		*unindexed++
		return false
	}
	c.touched.put(k, 0)
	return false
}

// Analysis accumulates the request audit one request at a time; AuditRequests drives it over a
// stream, and a simulator can feed it directly.
type Analysis struct {
	s         Summary
	seed      maphash.Seed
	orders    *orders
	text      *chain // estimated chain: locates divergences in the text
	exact     *chain // the engine's chain when tokens are exact
	samples   map[uint64]string
	sites     map[siteKey]*Site
	sessions  map[uint64]uint64   // session -> first-block hash of its latest request
	repeated  map[uint64]struct{} // sessions seen with a second request
	conv      *Conversations
	hist      []int64
	idsBuf    []uint32
	unindexed int64
	progress  func(int64)
}

type siteKey struct {
	msg   int
	cause string
	block int
}

// histEdges are the lower bounds of the shared-prefix buckets, in blocks.
var histEdges = []int{0, 1, 2, 4, 8, 16, 64, 256}

// NewAnalysis returns an empty analysis for the given block size and index bound.
func NewAnalysis(blockSize, maxBlocks int, exact bool) *Analysis {
	if blockSize <= 0 {
		blockSize = DefaultBlockSize
	}
	if maxBlocks <= 0 {
		maxBlocks = DefaultMaxBlocks
	}
	a := &Analysis{
		seed:     maphash.MakeSeed(),
		samples:  make(map[uint64]string),
		sites:    make(map[siteKey]*Site),
		sessions: make(map[uint64]uint64),
		repeated: make(map[uint64]struct{}),
		hist:     make([]int64, len(histEdges)),
	}
	a.s.BlockSize = blockSize
	a.s.Exact = exact
	a.text = newChain(blockSize, maxBlocks, a.seed)
	a.orders = newOrders(a.seed)
	a.conv = NewConversations(maxBlocks)
	if exact {
		a.exact = newChain(blockSize, maxBlocks, a.seed)
	}
	return a
}

// Add accounts one request. With exact tokens, toks holds the engine's ids; the estimated
// layout is still used to say where in the text a divergence lies.
func (a *Analysis) Add(req *Request, toks Tokens) {
	s := &a.s
	s.Requests++
	if req.BatchLeft > 0 {
		s.Batches++
		s.BatchLeft += int64(req.BatchLeft)
	}
	if req.Chat {
		s.Chat++
	} else {
		s.Completion++
	}
	if req.CacheControl > 0 {
		s.CacheControlRequests++
	}
	if req.CacheControlLast {
		s.CacheControlLast++
	}
	var sess uint64
	if req.Session != "" {
		sess = maphash.String(a.seed, req.Session) | 1
	} else if req.Chat && len(req.Messages) > 0 {
		sess = a.inferSession(req)
	}
	l := Render(req)
	a.idsBuf = EstimateIDs(l.Text, a.idsBuf[:0])
	span := a.s.BlockSize * BytesPerToken
	var div *Site
	// With exact tokens the engine's chain is the one whose bound matters for the figures.
	unindexed := &a.unindexed
	if a.exact != nil {
		unindexed = new(int64)
	}
	tw := a.text.add(a.idsBuf, sess, unindexed, func(i int, parent uint64) {
		// Keep this block's text as the sample later requests leaving the prefix at the
		// same parent are compared with; the first block stored is where this request left.
		mine := l.Text[i*span : min((i+1)*span, len(l.Text))]
		if other, ok := a.samples[parent]; ok && div == nil {
			div = a.siteFor(req, l, i, mine, other)
		} else if !ok && len(a.samples) < maxSamples {
			a.samples[parent] = strings.Clone(mine)
		}
	})
	w, ids := tw, a.idsBuf
	if a.exact != nil {
		ids = toks.IDs
		w = a.exact.add(ids, sess, &a.unindexed, nil)
	}
	s.PromptTokens += int64(len(ids))
	if sess != 0 {
		a.followUp(sess, ids, w)
	}
	if w.blocks == 0 {
		s.Short++
		return
	}
	bs := int64(a.s.BlockSize)
	s.CacheableTokens += int64(w.hits) * bs
	s.CrossSessionTokens += int64(w.cross) * bs
	s.WithinSessionTokens += int64(w.within) * bs
	for i := len(histEdges) - 1; i >= 0; i-- {
		if w.hits >= histEdges[i] {
			a.hist[i]++
			break
		}
	}
	if oc := a.orderCause(req, div); oc != "" {
		div.Cause = oc
	}
	if div != nil {
		if a.exact != nil {
			// The block where the engine's chain leaves the prefix; the text location is
			// the estimate's.
			div.Block = w.divBlock
		}
		a.addSite(*div)
	}
	if a.progress != nil && a.s.Requests%10000 == 0 {
		a.progress(a.s.Requests)
	}
}

// orderCause records the request's JSON units (its tools, its JSON message contents) and
// returns the order cause when the request left the shared prefix inside one whose content an
// earlier request had in another order.
func (a *Analysis) orderCause(req *Request, div *Site) string {
	if !req.Chat {
		return ""
	}
	cause := ""
	if req.Tools != "" {
		if c := a.orders.cause(0, req.Tools); div != nil && div.Message < 0 {
			cause = c
		}
	}
	for i, m := range req.Messages {
		if !jsonText(m.Content) {
			continue
		}
		if c := a.orders.cause(1+min(i, 254), m.Content); div != nil && div.Message == i {
			cause = c
		}
	}
	return cause
}

// inferSession finds the session of a chat request without an id (see Conversations).
func (a *Analysis) inferSession(req *Request) uint64 {
	sess, _ := a.conv.Infer(req)
	if sess == 0 {
		// Even, unlike the hashes of real ids, so the two never meet.
		sess = uint64(a.s.Requests) << 1
		a.s.InferredSessions++
		a.conv.Remember(req, sess)
	}
	return sess
}

// Conversations infers the sessions of chat requests that carry no session id from
// conversation continuity: a request whose messages begin with an earlier request's whole
// conversation and add to it (turn k+1 repeats turn k's messages) continues that request's
// session (the same messages again do not: siblings sent apart, or a retry); failing
// that, the same ignoring a leading system message (an agent that stamps the time into its
// system prompt changes it every turn; two sessions that open with the same first message then
// count as one). It remembers at most max conversations. The OpenAI user field is never used:
// it names an end user, not a conversation.
type Conversations struct {
	seed     maphash.Seed
	convs    map[uint64]uint64 // hash of a request's whole conversation -> its session
	prefixes []uint64
	max      int
}

// NewConversations returns an empty inference that remembers at most max conversations.
func NewConversations(max int) *Conversations {
	return &Conversations{seed: maphash.MakeSeed(), convs: make(map[uint64]uint64), max: max}
}

// Infer returns the session of the conversation req continues and true, or 0 and false when
// it continues none (then call Remember with a new session). A continued request is
// remembered under its session.
func (c *Conversations) Infer(req *Request) (uint64, bool) {
	if !req.Chat || len(req.Messages) == 0 {
		return 0, false
	}
	full, rest := c.keys(req.Messages)
	var sess uint64
	for _, keys := range [][]uint64{full, rest} {
		// From the last message but one: a request must add to an earlier conversation to
		// continue it. The same messages again are a sibling or a retry of that request (an
		// agent sending one prompt several times at once), not its next turn.
		for i := len(keys) - 2; i >= 0 && sess == 0; i-- {
			sess = c.convs[keys[i]]
		}
	}
	if sess == 0 {
		return 0, false
	}
	c.remember(full, rest, sess)
	return sess, true
}

// Remember records req's whole conversation as session sess's latest.
func (c *Conversations) Remember(req *Request, sess uint64) {
	if !req.Chat || len(req.Messages) == 0 {
		return
	}
	full, rest := c.keys(req.Messages)
	c.remember(full, rest, sess)
}

func (c *Conversations) keys(msgs []Message) (full, rest []uint64) {
	if len(msgs) > 1 && (msgs[0].Role == "system" || msgs[0].Role == "developer") {
		rest = slices.Clone(c.convPrefixes(msgs[1:], 1))
	}
	return c.convPrefixes(msgs, 0), rest
}

func (c *Conversations) remember(full, rest []uint64, sess uint64) {
	for _, keys := range [][]uint64{full, rest} {
		if len(keys) > 0 && len(c.convs) < c.max {
			c.convs[keys[len(keys)-1]] = sess
		}
	}
}

// convPrefixes hashes each prefix of msgs (tag keeps the with- and without-system forms apart)
// into c.prefixes, which it returns.
func (c *Conversations) convPrefixes(msgs []Message, tag byte) []uint64 {
	var h maphash.Hash
	h.SetSeed(c.seed)
	h.WriteByte(tag)
	c.prefixes = c.prefixes[:0]
	for _, m := range msgs {
		h.WriteString(m.Role)
		h.WriteByte(0)
		h.WriteString(m.Content)
		h.WriteByte(0)
		c.prefixes = append(c.prefixes, h.Sum64())
	}
	return c.prefixes
}

// followUp accounts a request of a session: whether it is a later turn, how much of it the
// cache serves, and whether its first block changed since the session's previous request.
func (a *Analysis) followUp(sess uint64, ids []uint32, w walk) {
	s := &a.s
	bs := a.s.BlockSize
	var first uint64
	if len(ids) >= bs {
		c := a.text
		if a.exact != nil {
			c = a.exact
		}
		first = c.hash(0, ids[:bs])
	}
	prev, seen := a.sessions[sess]
	if seen {
		if _, ok := a.repeated[sess]; !ok {
			a.repeated[sess] = struct{}{} // bounded as a.sessions is
			s.RepeatedSessions++
		}
		s.FollowUps++
		s.FollowUpTokens += int64(len(ids))
		s.FollowUpCacheable += int64(w.hits * bs)
		if prev != 0 && first != 0 && prev != first {
			s.FollowUpFirstBlockChanged++
		}
	}
	switch {
	case seen || len(a.sessions) < a.text.max:
		a.sessions[sess] = first
	default:
		s.SessionsCapped = true
		s.UntrackedRequests++
	}
}

// siteFor describes where req left the shared prefix at block i, comparing its text there
// with the text an earlier request had.
func (a *Analysis) siteFor(req *Request, l Layout, i int, mine, other string) *Site {
	k := 0
	for k < len(mine) && k < len(other) && mine[k] == other[k] {
		k++
	}
	off := i*a.s.BlockSize*BytesPerToken + k
	msg, within := l.Locate(off)
	var example, cause, otherEx string
	if l.IDs {
		// A token-id prompt: the offset counts tokens, and the ids are shown as they are.
		within /= BytesPerToken
		example, cause = idsAround(l.Text, off/BytesPerToken), "token ids"
		otherEx = idsAround(other, k/BytesPerToken)
	} else {
		example, cause = around(l.Text, off)
		otherEx, _ = around(other, k)
	}
	role := "tools"
	if msg >= 0 {
		role = l.Roles[msg]
	}
	return &Site{Message: msg, Role: role, Offset: within, Block: i, Cause: cause, Count: 1, Example: example, Other: otherEx, Line: req.Line}
}

func (a *Analysis) addSite(st Site) {
	key := siteKey{msg: st.Message, cause: st.Cause, block: st.Block}
	if old, ok := a.sites[key]; ok {
		old.Count++
		return
	}
	if len(a.sites) >= maxSites {
		return
	}
	a.sites[key] = &st
}

var (
	reDate   = regexp.MustCompile(`(?i)\d{4}-\d{2}-\d{2}|\d{1,2}:\d{2}(:\d{2})?|\b(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b.{0,4}\d{1,4}|\d{1,2}[ /.-](jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)|\b(today|date|time)\b`)
	reUUID   = regexp.MustCompile(`(?i)[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	reHexID  = regexp.MustCompile(`(?i)\b(?:[a-z_]*[-_])?[0-9a-f]*[0-9][0-9a-f]*[a-f][0-9a-f]*\b|\b[a-z]+[_-][0-9a-z]{6,}\b`)
	reNumber = regexp.MustCompile(`\d`)
)

// around returns the text near off (the word it falls in and a little context) and the likely
// kind of value that differs there.
func around(text string, off int) (string, string) {
	lo := max(0, off-24)
	hi := min(len(text), off+24)
	// Widen to the whole token the difference falls in.
	ws := off
	for ws > 0 && ws > off-40 && isWordByte(text[ws-1]) {
		ws--
	}
	we := off
	for we < len(text) && we < off+48 && isWordByte(text[we]) {
		we++
	}
	word := text[ws:we]
	ctx := text[lo:hi]
	ctx = strings.ToValidUTF8(ctx, "")
	switch {
	case reUUID.MatchString(text[max(0, off-36):min(len(text), off+36)]):
		return ctx, "uuid"
	case reDate.MatchString(text[max(0, off-16):min(len(text), off+16)]):
		return ctx, "date/time"
	case reHexID.MatchString(word):
		return ctx, "id"
	case reNumber.MatchString(word):
		return ctx, "number"
	}
	return ctx, "text"
}

// idsAround shows the token ids of a packed id prompt from a few before token i to a few after.
func idsAround(packed string, i int) string {
	n := len(packed) / BytesPerToken
	lo, hi := max(0, i-3), min(n, i+5)
	var sb strings.Builder
	sb.WriteString("ids")
	for k := lo; k < hi; k++ {
		if k == i {
			sb.WriteString(" |")
		}
		fmt.Fprintf(&sb, " %d", binary.LittleEndian.Uint32([]byte(packed[k*BytesPerToken:(k+1)*BytesPerToken])))
	}
	return sb.String()
}

func isWordByte(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b == '-' || b == '_' || b == ':' || b == '.'
}

// Summary returns the figures so far.
func (a *Analysis) Summary() Summary {
	s := a.s
	s.Sessions = int64(len(a.sessions))
	s.UnindexedBlocks = a.unindexed
	s.Capped = a.unindexed > 0
	c := a.text
	if a.exact != nil {
		c = a.exact
	}
	c.nodes.each(func(_ uint64, n uint32) {
		if n == depth0Bit|1 {
			s.UniqueFirstBlock++
		}
	})
	s.SharedPrefix = make([]Bucket, len(histEdges))
	for i, lo := range histEdges {
		hi := -1
		if i+1 < len(histEdges) {
			hi = histEdges[i+1] - 1
		}
		s.SharedPrefix[i] = Bucket{Min: lo, Max: hi, Requests: a.hist[i]}
	}
	s.Sites = make([]Site, 0, len(a.sites))
	for _, st := range a.sites {
		s.Sites = append(s.Sites, *st)
	}
	slices.SortFunc(s.Sites, func(x, y Site) int {
		if x.Count != y.Count {
			if x.Count > y.Count {
				return -1
			}
			return 1
		}
		return int(x.Line - y.Line)
	})
	if len(s.Sites) > 20 {
		s.Sites = s.Sites[:20]
	}
	if s.LineErrors == nil {
		s.LineErrors = []string{}
	}
	return s
}

func (a *Analysis) lineError(err error) {
	a.s.Skipped++
	if len(a.s.LineErrors) < maxLineErrors {
		a.s.LineErrors = append(a.s.LineErrors, err.Error())
	}
}

// AuditRequests streams JSONL requests from r and returns the summary. Memory is bounded by
// MaxLine, MaxBlocks and the tokenizer's in-flight requests, not by the input's length.
func AuditRequests(ctx context.Context, r io.Reader, opts RequestOptions) (Summary, error) {
	tok := opts.Tokenizer
	if tok == nil {
		tok = Estimator{}
	}
	a := NewAnalysis(opts.BlockSize, opts.MaxBlocks, tok.Exact())
	a.progress = opts.Progress
	rr := NewRequestReader(r, opts.MaxLine)
	rr.KeepRaw = tok.Exact()
	var err error
	if tok.Exact() {
		err = a.streamExact(ctx, rr, tok, max(1, opts.Concurrency))
	} else {
		err = a.streamEstimated(ctx, rr)
	}
	if err != nil && ctx.Err() == nil {
		return Summary{}, err
	}
	s := a.Summary()
	s.BodyKey = rr.BodyKey()
	if rep, ok := ReportOf(r); ok {
		s.Source = &rep
	}
	if err != nil {
		// Interrupted: what was read so far, marked, with the error.
		s.Interrupted = true
		return s, err
	}
	if s.Requests == 0 {
		if s.Skipped > 0 {
			return s, fmt.Errorf("no usable request in %d lines (first: %s): want one OpenAI chat or completion body per line, or an export with the body under a key", s.Skipped, JoinLineErrors(s.LineErrors))
		}
		return s, errors.New("no requests in the input")
	}
	return s, nil
}

func (a *Analysis) streamEstimated(ctx context.Context, rr *RequestReader) error {
	for n := 0; ; n++ {
		// Every 256 lines, usable or not: a log of skipped lines is read to its end too.
		if n%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		req, err := rr.Next()
		rr.Release()
		if errors.Is(err, io.EOF) {
			return nil
		}
		var le *LineError
		if errors.As(err, &le) {
			a.lineError(le)
			continue
		}
		if err != nil {
			return err
		}
		a.Add(req, Tokens{})
	}
}

// streamExact tokenizes with bounded concurrency and feeds the analysis in input order, since
// "first seen" depends on order.
func (a *Analysis) streamExact(ctx context.Context, rr *RequestReader, tok Tokenizer, n int) error {
	next := func() (*Request, struct{}, error) {
		req, err := rr.Next()
		rr.Release()
		return req, struct{}{}, err
	}
	return TokenizeInOrder(ctx, n, tok, next, func(req *Request, _ struct{}, toks Tokens, err error) error {
		var le *LineError
		switch {
		case errors.As(err, &le):
			a.lineError(le)
		case err != nil:
			return fmt.Errorf("line %d: %w", req.Line, err)
		default:
			a.Add(req, toks)
		}
		return nil
	})
}

// userText reports whether requests leave the shared prefix inside a user message (or a plain
// completion prompt) on what the user typed (text, a number: "12. what is ...") rather than on
// a date or an id a program wrote.
func userText(st Site) bool {
	return (st.Role == "user" || st.Role == "") && (st.Cause == "text" || st.Cause == "token ids" || st.Cause == "number")
}
