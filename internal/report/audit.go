package report

import (
	"fmt"
	"strconv"

	"github.com/kvcheck/kvcheck/internal/audit"
	"github.com/kvcheck/kvcheck/internal/finding"
)

// AuditRun is everything `kvcheck audit` found (audit.RunAudit builds it).
type AuditRun = audit.Run

type auditDoc struct {
	SchemaVersion int                `json:"schema_version"`
	BlockSize     int                `json:"block_size"`
	Tokens        string             `json:"tokens"`
	Templates     []auditTemplateDoc `json:"templates"`
	Findings      []auditFindingDoc  `json:"findings"`
	Requests      *auditRequestsDoc  `json:"requests"`
}

type auditTemplateDoc struct {
	File   string `json:"file"`
	Format string `json:"format"`
	// Verdict is the worst case (what --fail-on acts on), BestVerdict the best; Assumptions
	// say what separates them.
	Verdict     string               `json:"verdict"`
	BestVerdict string               `json:"best_verdict"`
	Assumptions []string             `json:"assumptions"`
	Rendered    string               `json:"rendered"`
	RenderError string               `json:"render_error"`
	Divergences []auditDivergenceDoc `json:"divergences"`
	// Embedded is, for a configuration file, where each chat template it carries is.
	Embedded []string `json:"embedded"`
}

type auditDivergenceDoc struct {
	Pair         string `json:"pair"`
	Conversation string `json:"conversation"`
	Offset       int    `json:"offset"`
	TokensBefore int    `json:"tokens_before"`
	Block        int    `json:"block"`
	SharedEnd    int    `json:"shared_text_ends_at"`
	Frequency    string `json:"frequency"`
	Detail       string `json:"detail"`
}

type auditFindingDoc struct {
	File         string `json:"file"`
	Line         int    `json:"line"`
	Expression   string `json:"expression"`
	Kind         string `json:"kind"`
	Position     string `json:"position"`
	Block        int    `json:"block"`
	TokensBefore int    `json:"tokens_before"`
	Frequency    string `json:"frequency"`
	Severity     string `json:"severity"`
	Code         string `json:"code"`
	Message      string `json:"message"`
	Estimated    bool   `json:"estimated"`
	Condition    string `json:"condition"`
	Origin       string `json:"origin"`
	Evidence     string `json:"evidence"`
	Variable     string `json:"variable"`
	BestPosition string `json:"best_position"`
	Assumption   string `json:"assumption"`
	Render       string `json:"render"`
	Fix          string `json:"fix"`
}

type auditRequestsDoc struct {
	Source                   string           `json:"source"`
	Estimated                bool             `json:"estimated"`
	BodyKey                  string           `json:"body_key"`
	Requests                 int64            `json:"requests"`
	Chat                     int64            `json:"chat"`
	Completion               int64            `json:"completion"`
	Sessions                 int64            `json:"sessions"`
	SessionsCapped           bool             `json:"sessions_capped"`
	InferredSessions         int64            `json:"inferred_sessions"`
	ShorterThanBlock         int64            `json:"shorter_than_one_block"`
	Skipped                  int64            `json:"skipped_lines"`
	LineErrors               []string         `json:"line_errors"`
	PromptTokens             int64            `json:"prompt_tokens"`
	CacheableTokens          int64            `json:"cacheable_tokens"`
	CacheableFraction        float64          `json:"cacheable_fraction"`
	CrossSessionTokens       int64            `json:"cross_session_tokens"`
	WithinSessionTokens      int64            `json:"within_session_tokens"`
	FollowUps                int64            `json:"follow_up_requests"`
	FollowUpCacheable        float64          `json:"follow_up_cacheable_fraction"`
	FollowUpFirstBlockChange int64            `json:"follow_up_first_block_changed"`
	UniqueFirstBlock         int64            `json:"unique_first_block"`
	UniqueFirstBlockFraction float64          `json:"unique_first_block_fraction"`
	SharedPrefixBlocks       []auditBucketDoc `json:"shared_prefix_blocks"`
	Divergence               []auditSiteDoc   `json:"divergence"`
	CacheControlRequests     int64            `json:"cache_control_requests"`
	CacheControlLast         int64            `json:"cache_control_on_last_message"`
	Capped                   bool             `json:"index_full"`
	UnindexedBlocks          int64            `json:"unindexed_blocks"`
}

type auditBucketDoc struct {
	Min      int   `json:"min"`
	Max      *int  `json:"max"`
	Requests int64 `json:"requests"`
}

type auditSiteDoc struct {
	Message int    `json:"message"`
	Role    string `json:"role"`
	Offset  int    `json:"offset"`
	Block   int    `json:"block"`
	Cause   string `json:"cause"`
	Count   int64  `json:"count"`
	Example string `json:"example"`
	Other   string `json:"other"`
	Line    int64  `json:"line"`
}

func tokensLabel(exact bool) string {
	if exact {
		return "exact"
	}
	return "estimated"
}

func frac(n, d int64) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / float64(d)
}

// Audit is the result of kvcheck audit: template findings point at their file and line.
func Audit(a AuditRun) Result {
	return Result{Findings: auditFindings(a), Document: auditDocument(a), Text: func(t *Text) error { return t.audit(a) }}
}

// auditFindings are the audit's findings as the machine formats show them.
func auditFindings(a AuditRun) []finding.Finding {
	out := make([]finding.Finding, 0, len(a.Findings))
	for _, f := range a.Findings {
		x := f.Finding
		if x.File != "" && x.Line > 0 {
			x.Subject = "" // the file and line say it
		}
		out = append(out, x)
	}
	return out
}

// auditDocument is audit's JSON document.
func auditDocument(a AuditRun) auditDoc {
	doc := auditDoc{
		SchemaVersion: SchemaVersion,
		BlockSize:     a.BlockSize,
		Tokens:        tokensLabel(a.Exact),
		Templates:     make([]auditTemplateDoc, 0, len(a.Templates)),
		Findings:      make([]auditFindingDoc, 0, len(a.Findings)),
	}
	for _, t := range a.Templates {
		td := auditTemplateDoc{File: t.File, Format: t.Format, Verdict: string(t.Verdict), BestVerdict: string(t.Best),
			Assumptions: append([]string{}, t.Assumptions...), Rendered: t.Rendered, RenderError: t.RenderError, Divergences: []auditDivergenceDoc{},
			Embedded: append([]string{}, t.Embedded...)}
		if td.BestVerdict == "" {
			td.BestVerdict = td.Verdict
		}
		for _, d := range t.Divergences {
			td.Divergences = append(td.Divergences, auditDivergenceDoc{Pair: d.Pair, Conversation: d.Variant, Offset: d.Offset,
				TokensBefore: d.TokensBefore, Block: d.Block, SharedEnd: d.SharedEnd, Frequency: string(d.Frequency), Detail: d.Detail})
		}
		doc.Templates = append(doc.Templates, td)
	}
	for _, f := range a.Findings {
		doc.Findings = append(doc.Findings, auditFindingDoc{
			File: f.File, Line: f.Line, Expression: f.Expression, Kind: string(f.Kind), Position: string(f.Position),
			Block: f.Block, TokensBefore: f.TokensBefore, Frequency: string(f.Frequency), Severity: f.Severity.String(),
			Code: f.Code, Message: f.Message, Estimated: f.Estimated, Condition: f.Condition, Origin: f.Origin, Evidence: string(f.Evidence),
			Variable: f.Variable, BestPosition: bestPosition(f), Assumption: f.Assumption, Render: f.Render, Fix: f.Fix,
		})
	}
	if s := a.Requests; s != nil {
		rd := &auditRequestsDoc{
			Source: a.RequestsSource, Estimated: !s.Exact, BodyKey: s.BodyKey, Requests: s.Requests, Chat: s.Chat,
			Completion: s.Completion, Sessions: s.Sessions, SessionsCapped: s.SessionsCapped, InferredSessions: s.InferredSessions, ShorterThanBlock: s.Short, Skipped: s.Skipped,
			LineErrors: append([]string{}, s.LineErrors...), PromptTokens: s.PromptTokens, CacheableTokens: s.CacheableTokens,
			CacheableFraction: frac(s.CacheableTokens, s.PromptTokens), CrossSessionTokens: s.CrossSessionTokens,
			WithinSessionTokens: s.WithinSessionTokens, UniqueFirstBlock: s.UniqueFirstBlock,
			FollowUps: s.FollowUps, FollowUpCacheable: frac(s.FollowUpCacheable, s.FollowUpTokens),
			FollowUpFirstBlockChange: s.FollowUpFirstBlockChanged,
			UniqueFirstBlockFraction: frac(s.UniqueFirstBlock, s.Requests-s.Short),
			SharedPrefixBlocks:       []auditBucketDoc{}, Divergence: []auditSiteDoc{},
			CacheControlRequests: s.CacheControlRequests, CacheControlLast: s.CacheControlLast,
			Capped: s.Capped, UnindexedBlocks: s.UnindexedBlocks,
		}
		for _, b := range s.SharedPrefix {
			bd := auditBucketDoc{Min: b.Min, Requests: b.Requests}
			if b.Max >= 0 {
				m := b.Max
				bd.Max = &m
			}
			rd.SharedPrefixBlocks = append(rd.SharedPrefixBlocks, bd)
		}
		for _, st := range s.Sites {
			rd.Divergence = append(rd.Divergence, auditSiteDoc{Message: st.Message, Role: st.Role, Offset: st.Offset,
				Block: st.Block, Cause: st.Cause, Count: st.Count, Example: st.Example, Other: st.Other, Line: st.Line})
		}
		doc.Requests = rd
	}
	return doc
}

// bestPosition is a finding's position under the best class: "clean" for a variable that
// loses nothing when fixed per deployment.
func bestPosition(f audit.Finding) string {
	switch {
	case f.BestPosition != "":
		return string(f.BestPosition)
	case f.Assumption != "":
		return "clean"
	}
	return string(f.Position)
}

// Audit writes the audit for people: template verdicts, findings with their fixes, and the
// request-set figures, each marked estimated unless the tokens were the server's.
func (t *Text) audit(a AuditRun) error {
	if len(a.Templates) > 0 {
		t.Heading(fmt.Sprintf("Templates (block size %d; ~ marks an estimated token position)", a.BlockSize))
		rows := make([][]string, 0, len(a.Templates))
		for _, tp := range a.Templates {
			n := 0
			for _, f := range a.Findings {
				if f.File == tp.File && tp.File != "" {
					n++
				}
			}
			v := string(tp.Verdict)
			if tp.Best != "" && tp.Best != tp.Verdict {
				v += ", " + string(tp.Best) + " at best"
			}
			rows = append(rows, []string{tp.File, tp.Format, v, strconv.Itoa(n)})
		}
		if err := t.Table([]string{"FILE", "FORMAT", "VERDICT", "FINDINGS"}, rows); err != nil {
			return err
		}
		for _, tp := range a.Templates {
			for _, e := range tp.Embedded {
				t.Muted("%s: chat template at %s", tp.File, e)
			}
			for _, as := range tp.Assumptions {
				t.Muted("%s: %s", tp.File, as)
			}
			if tp.RenderError != "" {
				t.Muted("%s: not rendered offline (%s); positions are estimated from the template's text", tp.File, tp.RenderError)
			}
		}
	}
	if s := a.Requests; s != nil {
		if len(a.Templates) > 0 {
			t.Line("")
		}
		t.Heading(fmt.Sprintf("Requests: %s (tokens %s, block size %d)", a.RequestsSource, tokensLabel(s.Exact), a.BlockSize))
		reqApprox := ""
		if !s.Exact {
			reqApprox = " (estimated)"
		}
		sessions := strconv.FormatInt(s.Sessions, 10)
		if s.SessionsCapped {
			sessions = "at least " + sessions + " (the session table's bound, --max-blocks)"
		}
		t.Line("requests          %d (chat %d, completion %d), sessions %s", s.Requests, s.Chat, s.Completion, sessions)
		if s.InferredSessions > 0 {
			t.Muted("%d sessions without an id, inferred: a request that repeats an earlier request's whole conversation (its system message aside) continues its session", s.InferredSessions)
		}
		if s.BodyKey != "" {
			t.Muted("request bodies read from the export key %q", s.BodyKey)
		}
		t.Line("prompt tokens     %d%s", s.PromptTokens, reqApprox)
		cf := frac(s.CacheableTokens, s.PromptTokens)
		t.Verdict(fmt.Sprintf("shareable prefill %s of prompt tokens with an unbounded shared cache%s", pct(cf), reqApprox))
		t.Line("  cross-session   %s%s: a KV-aware router helps", pct(frac(s.CrossSessionTokens, s.PromptTokens)), reqApprox)
		t.Line("  within-session  %s%s: session affinity is enough", pct(frac(s.WithinSessionTokens, s.PromptTokens)), reqApprox)
		if s.FollowUps > 0 {
			t.Line("later turns       %d in sessions seen before: %s of their prompt served from cache; first block changed in %d%s",
				s.FollowUps, pct(frac(s.FollowUpCacheable, s.FollowUpTokens)), s.FollowUpFirstBlockChanged, reqApprox)
		}
		t.Line("first block unique %s of requests (%d of %d)%s", pct(frac(s.UniqueFirstBlock, s.Requests-s.Short)), s.UniqueFirstBlock, s.Requests-s.Short, reqApprox)
		if s.Short > 0 {
			t.Line("shorter than a block %d requests", s.Short)
		}
		rows := make([][]string, 0, len(s.SharedPrefix))
		for _, b := range s.SharedPrefix {
			label := strconv.Itoa(b.Min)
			switch {
			case b.Max < 0:
				label += "+"
			case b.Max != b.Min:
				label += "-" + strconv.Itoa(b.Max)
			}
			rows = append(rows, []string{label, strconv.FormatInt(b.Requests, 10), pct(frac(b.Requests, s.Requests-s.Short))})
		}
		t.Line("")
		t.Line("shared prefix per request, in blocks%s:", reqApprox)
		if err := t.Table([]string{"BLOCKS", "REQUESTS", "SHARE"}, rows); err != nil {
			return err
		}
		if len(s.Sites) > 0 {
			t.Line("")
			if s.Exact {
				t.Line("where requests diverge from earlier ones (blocks the engine's; offsets and text in the request's messages):")
			} else {
				t.Line("where requests diverge from earlier ones (blocks estimated):")
			}
			rows = rows[:0]
			for _, st := range s.Sites {
				rows = append(rows, []string{st.Where(), strconv.Itoa(st.Offset), strconv.Itoa(st.Block), st.Cause,
					strconv.FormatInt(st.Count, 10), fmt.Sprintf("%q", st.Example), strconv.FormatInt(st.Line, 10)})
			}
			if err := t.Table([]string{"WHERE", "OFFSET", "BLOCK", "CAUSE", "REQUESTS", "TEXT THERE", "FIRST LINE"}, rows); err != nil {
				return err
			}
		}
	}
	t.Line("")
	if len(a.Findings) == 0 {
		t.Line("%s", t.Good("no findings"))
		return nil
	}
	t.Heading("Findings")
	for _, f := range a.Findings {
		t.Finding(f.Finding)
		if f.Fix != "" {
			t.Muted("  fix: %s", f.Fix)
		}
	}
	return nil
}
