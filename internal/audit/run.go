package audit

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/kvcheck/kvcheck/internal/usage"
)

// Run is everything `kvcheck audit` found: the template verdicts and findings, and the
// request-set summary when a request log was given.
type Run struct {
	BlockSize int
	// Exact is true when token positions come from a server's /tokenize.
	Exact     bool
	Templates []Template
	Findings  []Finding
	// RequestsSource names the request log; Requests is nil when none was audited.
	RequestsSource string
	Requests       *Summary
}

// Status is where an audit says what it is doing: notes for the user and progress while it
// reads a request log (report.Status is one).
type Status interface {
	Note(format string, args ...any)
	Progress(format string, args ...any)
	Done()
}

// RunOptions are the inputs of one audit.
type RunOptions struct {
	// Templates are template files and directories, audited as one unit.
	Templates []string
	// Requests is a request log ("-" reads Stdin); empty audits none.
	Requests string
	Stdin    io.Reader
	// BlockSize is the block size in tokens; a Remote's block size replaces it.
	// BlockSizeGiven says the user chose it, so a different server block size is noted.
	BlockSize      int
	BlockSizeGiven bool
	MaxBlocks      int
	MaxLine        int
	// Tokenize is the server to read exact tokens from; an empty URL estimates tokens.
	Tokenize Tokenize
	// Code are directories of the code that fills the templates (--code).
	Code []string
	// Assume are the --assume NAME=CLASS values, as given.
	Assume []string
	// Source windows a database request log (--since, --until, --max-rows).
	Source SourceOptions
}

// ParseAssume reads --assume values (NAME=CLASS, CLASS one of fixed, daily, per-request,
// per-user, per-session, hourly, per-minute, per-second, monthly).
func ParseAssume(values []string) (map[string]Frequency, error) {
	out := map[string]Frequency{}
	for _, v := range values {
		name, class, ok := strings.Cut(v, "=")
		name, class = strings.TrimSpace(name), strings.TrimSpace(class)
		f, known := AssumeClasses[class]
		switch {
		case !ok || name == "":
			return nil, usage.Errorf("--assume %q: want NAME=CLASS, e.g. --assume agent_name=fixed", v)
		case !known:
			return nil, usage.Errorf("--assume %s: unknown class %q; use fixed, daily, per-request, per-user, per-session, hourly, per-minute, per-second or monthly", v, class)
		}
		if old, dup := out[name]; dup && old != f {
			return nil, usage.Errorf("--assume %s: %s is already assumed %s", v, name, old)
		}
		out[name] = f
	}
	return out, nil
}

// Check returns a usage error for options that cannot make an audit, before any work is done.
func (o RunOptions) Check() error {
	switch {
	case len(o.Templates) == 0 && o.Requests == "" && o.Tokenize.URL == "":
		return usage.Errorf("nothing to audit: give template files or directories, --requests FILE, or --tokenize URL")
	case o.BlockSize <= 0:
		return usage.Errorf("--block-size %d: must be a positive number of tokens", o.BlockSize)
	case o.MaxBlocks <= 0:
		return usage.Errorf("--max-blocks %d: must be positive", o.MaxBlocks)
	case o.MaxLine <= 0:
		return usage.Errorf("--max-line %d: must be positive", o.MaxLine)
	case len(o.Templates) == 0 && (len(o.Code) > 0 || len(o.Assume) > 0):
		return usage.Errorf("--code and --assume settle template variables: give the templates too")
	}
	for _, d := range o.Code {
		if info, err := os.Stat(d); err != nil || !info.IsDir() {
			return usage.Errorf("--code %s: not a directory (give the directory of the code that fills the templates)", d)
		}
	}
	if _, err := ParseAssume(o.Assume); err != nil {
		return err
	}
	if err := o.Source.Check(o.Requests); err != nil {
		return err
	}
	return o.Tokenize.Check()
}

// RunAudit connects to the --tokenize server when there is one, audits the templates, probes
// the server's own template and the template files through it, and audits the request log,
// whose evidence then settles the template questions it shows changing.
func RunAudit(ctx context.Context, st Status, o RunOptions) (Run, error) {
	res := Run{BlockSize: o.BlockSize, Templates: []Template{}, Findings: []Finding{}}
	var server *Server
	if o.Tokenize.URL != "" {
		remote, err := o.Tokenize.Connect(ctx, st, o.BlockSize)
		if err != nil {
			return Run{}, err
		}
		if o.BlockSizeGiven && !remote.Assumed && remote.BlockSize != o.BlockSize {
			st.Note("the server's block size is %d, not --block-size %d; using the server's", remote.BlockSize, o.BlockSize)
		}
		res.BlockSize = remote.BlockSize
		if remote.CachingOff != nil {
			off := *remote.CachingOff
			off.File = remote.Server.Shown()
			res.Findings = append(res.Findings, Finding{Finding: off, Block: -1, Frequency: Unknown})
		}
		server, res.Exact = remote.Server, true
	}

	if len(o.Templates) > 0 {
		assume, err := ParseAssume(o.Assume)
		if err != nil {
			return Run{}, err
		}
		topts := TemplateOptions{BlockSize: res.BlockSize, Code: o.Code, Assume: assume}
		if server != nil {
			topts.Counter = server
		}
		tr, err := AuditTemplatesWith(ctx, o.Templates, topts)
		if err != nil {
			return Run{}, err
		}
		for _, why := range tr.Skipped {
			st.Note("%s; skipped", why)
		}
		for _, name := range tr.UnusedAssume {
			st.Note("--assume %s: no variable of that name is left unsettled in the templates; nothing was assumed", name)
		}
		res.Templates = append(res.Templates, tr.Templates...)
		res.Findings = append(res.Findings, tr.Findings...)
	}
	if server != nil {
		tpls, fs, refused, err := ProbeTemplateFiles(ctx, server, res.Templates, res.BlockSize)
		if err != nil {
			return Run{}, err
		}
		res.Templates = append(res.Templates, tpls...)
		res.Findings = append(res.Findings, fs...)
		if refused != "" {
			st.Note("%s did not render the template files (%s); start vLLM with --trust-request-chat-template for exact positions, they stay estimated", server.Shown(), refused)
		}
		tpl, fs, err := ProbeServerTemplate(ctx, server, res.BlockSize)
		if err != nil {
			return Run{}, err
		}
		res.Templates = append(res.Templates, tpl)
		res.Findings = append(res.Findings, fs...)
	}
	if o.Requests != "" {
		so := o.Source
		so.MaxLine = o.MaxLine
		in, err := OpenSource(ctx, o.Requests, o.Stdin, so)
		if err != nil {
			return Run{}, err
		}
		defer func() { _ = in.Close() }()
		res.RequestsSource = in.Name
		ropts := RequestOptions{BlockSize: res.BlockSize, MaxBlocks: o.MaxBlocks, MaxLine: o.MaxLine, Concurrency: o.Tokenize.Concurrency}
		if server != nil {
			ropts.Tokenizer = server
		}
		ropts.Progress = func(n int64) { st.Progress("%d requests", n) }
		sum, err := AuditRequests(ctx, in, ropts)
		st.Done()
		if err != nil && sum.Interrupted {
			err = nil // reported as partial; the command exits 130
		}
		if err != nil {
			return Run{}, fmt.Errorf("requests %s: %w", res.RequestsSource, err)
		}
		res.Requests = &sum
		// The log settles the template questions it shows changing (the slices are shared).
		Corroborate(&TemplateReport{Templates: res.Templates, Findings: res.Findings}, sum, res.RequestsSource)
		res.Findings = append(res.Findings, sum.Findings(res.RequestsSource)...)
	}
	return res, nil
}
