package lint

import (
	"fmt"
	"strings"
	"sync"

	"github.com/kvcheck/kvcheck/internal/finding"
)

// queryCheck checks one string (a query, a variable query, a name, the names of an override)
// and records what it finds, with offsets in that string, in res: the same string checked the
// same way finds the same things wherever it is written, so the record is kept (queryCache)
// and applied to each site that holds the string (fileLint.apply).
type queryCheck struct {
	l *Linter
	// text is the string the offsets are in; grafana says a rewrite's window is
	// $__rate_interval; record says the query is a recording rule's expr.
	text            string
	grafana, record bool
	res             *queryResult
}

// queryResult is what checking one string found.
type queryResult struct {
	queries  int          // queries and names checked
	textLen  int          // the length of the string checked
	findings []queryFound // in the order found
	refs     []queryRef   // the catalog's names selected, in the order met
	families []string     // the catalog families the names belong to
	// unparsed is 1 + the index of the finding saying the query does not parse (parseErr
	// says why), 0 when it parsed: a site in a Helm template says it otherwise.
	unparsed int
	parseErr string
	// engineOnly is, for a variable query, the first metric it selects when it selects only
	// vLLM engine metrics (labelled model_name, not model); "" otherwise.
	engineOnly string
}

// queryFound is a finding at offset off of the string checked; token is the text there. A
// rewrite's spans are in the string too, its site unset.
type queryFound struct {
	off   int
	token string
	f     *Finding
}

// queryRef is a name of the catalog selected at offset off.
type queryRef struct {
	name string
	off  int
}

func (qc *queryCheck) add(off int, token string, f Finding) *Finding {
	p := &f
	qc.res.findings = append(qc.res.findings, queryFound{off: off, token: token, f: p})
	return p
}

// ref records a name the catalog knows, where it is selected.
func (qc *queryCheck) ref(name string, off int) {
	if _, ok := qc.l.cat.Lookup(name); ok {
		qc.res.refs = append(qc.res.refs, queryRef{name: name, off: off})
	}
}

func (qc *queryCheck) family(f string) {
	for _, g := range qc.res.families {
		if g == f {
			return
		}
	}
	qc.res.families = append(qc.res.families, f)
}

// newCheck starts checking text (a site's value, or the names in it), not kept.
func (fl *fileLint) newCheck(s *site, text string) *queryCheck {
	return &queryCheck{l: fl.l, text: text, grafana: s.grafana, record: s.record, res: &queryResult{textLen: len(text)}}
}

// checkPromQL checks a query, the part of the site's value starting at base, or takes what
// checking the same text the same way found before.
func (fl *fileLint) checkPromQL(s *site, q string, base int, kind queryKind) *queryResult {
	key := queryKey{text: q, kind: kind, grafana: s.grafana, record: s.record}
	res := fl.l.queries.get(key, func(q string) *queryResult {
		qc := &queryCheck{l: fl.l, text: q, grafana: s.grafana, record: s.record, res: &queryResult{textLen: len(q)}}
		qc.promQL(q, kind)
		return qc.res
	})
	fl.apply(s, base, res)
	return res
}

// apply adds what a check found to the file, at the site's offset base.
func (fl *fileLint) apply(s *site, base int, res *queryResult) {
	fl.queries += res.queries
	for _, r := range res.refs {
		fl.ref(s, r.name, base+r.off)
	}
	if len(res.families) > 0 && fl.families == nil {
		fl.families = map[string]bool{}
	}
	for _, f := range res.families {
		fl.families[f] = true
	}
	for i, qf := range res.findings {
		f := *qf.f
		if qf.f.fix != nil {
			spans := make([]span, len(qf.f.fix.spans))
			for j, sp := range qf.f.fix.spans {
				spans[j] = span{start: base + sp.start, end: base + sp.end, text: sp.text}
			}
			f.fix = &edit{site: s, spans: spans}
		}
		if i == res.unparsed-1 && fl.masks != nil && fl.masked(s.srcStart, s.srcStart+len(s.value)+1) {
			// A template action stands where PromQL wants a duration or a number: the
			// rendered query may well parse.
			f.Severity = finding.Info
			f.Message = fmt.Sprintf("query does not parse with its Helm template actions masked (%s); check it in the output of helm template", res.parseErr)
			if s.raw {
				f.Metric = truncate(strings.TrimSpace(string(fl.orig[s.srcStart+base:s.srcStart+base+res.textLen])), 80)
			}
		}
		fl.add(s, base+qf.off, qf.token, f)
	}
}

// queryKey says what a check's result depends on besides the Linter: the text and how it is
// read.
type queryKey struct {
	text            string
	kind            queryKind
	grafana, record bool
}

// queryCache keeps the results of checking queries, so that a query written in many panels and
// files (dashboards repeat them) is parsed and walked once per run. It is safe for the
// workers of a run to share: a query being checked by one worker is waited for by another
// that needs it, not checked twice.
//
// Its memory is bounded: entries are kept in two generations, a new one started when the
// current holds maxQueryCacheBytes (the text of its queries and an estimate of what their
// results hold); a query found in the previous generation moves to the current one, and the
// one before is dropped. So the cache holds at most about 2 x maxQueryCacheBytes, and the
// queries used most recently stay. A query longer than maxCachedQuery is checked every time.
type queryCache struct {
	mu        sync.Mutex
	cur, prev map[queryKey]*queryEntry
	bytes     int // held by cur
	max       int // maxQueryCacheBytes, but in tests
	checks    int // queries checked (not found), for tests
}

type queryEntry struct {
	text string // the key's
	once sync.Once
	res  *queryResult
}

const (
	maxQueryCacheBytes = 8 << 20
	maxCachedQuery     = 64 << 10
)

func newQueryCache() *queryCache {
	return &queryCache{cur: map[queryKey]*queryEntry{}, max: maxQueryCacheBytes}
}

// get returns the result for key, from the cache or computed by check from the key's text (a
// copy, when kept: what the result holds of the text must not keep a whole file alive).
func (c *queryCache) get(key queryKey, check func(text string) *queryResult) *queryResult {
	if c == nil || len(key.text) > maxCachedQuery {
		return check(key.text)
	}
	c.mu.Lock()
	e, found := c.cur[key]
	if !found {
		if e = c.prev[key]; e != nil {
			delete(c.prev, key)
			key.text = e.text // the kept copy: the key given is a file's
		} else {
			key.text = strings.Clone(key.text)
			e = &queryEntry{text: key.text}
		}
		if c.bytes >= c.max {
			c.prev, c.cur, c.bytes = c.cur, map[queryKey]*queryEntry{}, 0
		}
		c.cur[key] = e
		c.bytes += entryBytes(key.text)
	}
	c.mu.Unlock()
	e.once.Do(func() {
		e.res = check(e.text)
		c.mu.Lock()
		c.bytes += resultBytes(e.res)
		c.checks++
		c.mu.Unlock()
	})
	return e.res
}

// entryBytes estimates what an entry's key holds: its text twice (the key, and the names and
// substrings its result keeps) and the map's slot.
func entryBytes(text string) int { return 2*len(text) + 128 }

// resultBytes estimates what a result holds: each finding with its message (a few hundred
// bytes), each name.
func resultBytes(r *queryResult) int { return 64 + 512*len(r.findings) + 48*len(r.refs) }
