package audit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/kvcheck/kvcheck/internal/finding"
	"github.com/kvcheck/kvcheck/internal/vllm"
)

// probeDates are the values given to date-like chat-template variables in the two renders of a
// probe, one day apart. Templates that read the clock themselves (strftime_now) cannot be
// moved this way; the static scanner covers those.
var probeDates = [2]map[string]any{
	{"date_string": "26 Jul 2024", "current_date": "2024-07-26", "today": "2024-07-26", "system_time": "2024-07-26T10:00:00+00:00"},
	{"date_string": "27 Jul 2024", "current_date": "2024-07-27", "today": "2024-07-27", "system_time": "2024-07-27T10:00:00+00:00"},
}

var probeConversation = []Message{
	{Role: "system", Content: "You are a helpful assistant for the ACME support desk."},
	{Role: "user", Content: "What are your opening hours?"},
}

// ProbeServerTemplate renders the same conversation through the server's chat template twice
// with two dates (and twice with none, to catch a clock the template reads itself), and
// reports the exact token where the renders first differ. The template entry is named after
// the server.
func ProbeServerTemplate(ctx context.Context, s *Server, blockSize int) (Template, []Finding, error) {
	return ProbeTemplate(ctx, s, s.Shown()+" (server chat template)", "", blockSize)
}

// ProbeTemplateFiles renders each Jinja template file among templates through the server, for
// exact positions, and returns the probed entries (named "PATH (rendered by the server)") with
// their findings. A server that refuses templates in requests (vLLM without
// --trust-request-chat-template answers 400) ends the probing: refused is its message, and the
// files not probed keep their estimated positions.
func ProbeTemplateFiles(ctx context.Context, s *Server, templates []Template, blockSize int) (probed []Template, fs []Finding, refused string, err error) {
	for _, t := range templates {
		if t.Format != "jinja" {
			continue
		}
		src, err := readTemplate(t.File)
		if err != nil {
			return nil, nil, "", err
		}
		tpl, tfs, err := ProbeTemplate(ctx, s, t.File+" (rendered by the server)", src, blockSize)
		var se *vllm.ServerError
		if errors.As(err, &se) && se.Status == http.StatusBadRequest {
			return probed, fs, se.Message, nil
		}
		if err != nil {
			return nil, nil, "", err
		}
		probed = append(probed, tpl)
		fs = append(fs, tfs...)
	}
	return probed, fs, "", nil
}

// ProbeTemplate is ProbeServerTemplate through the given chat template (the server's own when
// empty). A vLLM server refuses a template in the request with a 400 unless started with
// --trust-request-chat-template; the *ServerError says so.
func ProbeTemplate(ctx context.Context, s *Server, name, chatTemplate string, blockSize int) (Template, []Finding, error) {
	tpl := Template{File: name, Format: "server", Verdict: VerdictClean}
	render := func(msgs []Message, kw map[string]any) ([]uint32, error) {
		ids, _, err := s.TokenizeMessages(ctx, msgs, chatTemplate, kw)
		if err != nil {
			return nil, fmt.Errorf("probe chat template: %w", err)
		}
		return ids, nil
	}
	var renders [2][]uint32
	for i, kw := range probeDates {
		ids, err := render(probeConversation, kw)
		if err != nil {
			return tpl, nil, err
		}
		renders[i] = ids
	}
	plain1, strs, err := s.TokenizeMessages(ctx, probeConversation, chatTemplate, nil)
	if err != nil {
		return tpl, nil, fmt.Errorf("probe chat template: %w", err)
	}
	plain2, err := render(probeConversation, nil)
	if err != nil {
		return tpl, nil, err
	}
	// Where the conversation starts: render with another system message and compare.
	other := append([]Message{{Role: "system", Content: "Completely different instructions."}}, probeConversation[1:]...)
	otherIDs, err := render(other, probeDates[0])
	if err != nil {
		return tpl, nil, err
	}
	convStart := firstDiff(renders[0], otherIDs)
	var out []Finding
	add := func(at int, expr string, kind Kind, freq Frequency, origin string) {
		late := convStart >= 0 && at > convStart
		pos, block := place(at, blockSize, false, late)
		f := Finding{Finding: finding.Finding{File: name}, Expression: expr, Kind: kind, Position: pos, Block: block, TokensBefore: at,
			Frequency: freq, Estimated: false, Origin: origin, Evidence: EvidenceRender}
		f.finish(name)
		out = append(out, f)
		if pos.rank() > Position(tpl.Verdict).rank() {
			tpl.Verdict = Verdict(pos)
		}
	}
	if at := firstDiff(renders[0], renders[1]); at >= 0 {
		add(at, "a date passed in chat_template_kwargs (date_string, current_date, today, system_time)", KindDate, Unknown,
			"two renders of one conversation with dates a day apart differ from this token on")
	}
	if at := firstDiff(plain1, plain2); at >= 0 {
		add(at, "a value the template computes on every render", KindClock, PerCall,
			"two renders of one conversation moments apart differ from this token on")
	}
	if len(out) == 0 {
		// A template that reads the clock itself (strftime_now) ignores the kwargs and renders
		// alike within a day; today's date in its render gives it away.
		if at, date := dateIn(strs, time.Now()); at >= 0 {
			add(at, "today's date, rendered by the template itself (strftime_now)", KindClock, Daily,
				fmt.Sprintf("the render holds today's date %q though no date was passed", date))
		}
	}
	return tpl, out, nil
}

// dateFormats are the ways templates print a day (Llama's "%d %b %Y", Mistral's "%Y-%m-%d",
// Meta's "%d %B %Y", US and ISO forms).
var dateFormats = []string{"2006-01-02", "02 Jan 2006", "2 Jan 2006", "02 January 2006", "2 January 2006", "January 2, 2006", "Jan 2, 2006", "01/02/2006"}

// dateIn finds a date within a day of now in the rendered token strings and returns the index
// of the token where it starts (-1 when none does, or the server sent no token strings).
func dateIn(strs []string, now time.Time) (int, string) {
	text := strings.Join(strs, "")
	if text == "" {
		return -1, ""
	}
	for _, d := range []time.Time{now, now.AddDate(0, 0, -1), now.AddDate(0, 0, 1)} {
		for _, f := range dateFormats {
			s := d.Format(f)
			off := strings.Index(text, s)
			if off < 0 {
				continue
			}
			n := 0
			for i, t := range strs {
				if n+len(t) > off {
					return i, s
				}
				n += len(t)
			}
		}
	}
	return -1, ""
}

// firstDiff returns the first index where a and b differ, or -1 when they are equal.
func firstDiff(a, b []uint32) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return n
	}
	return -1
}
