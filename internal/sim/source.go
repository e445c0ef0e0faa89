package sim

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/kvcheck/kvcheck/internal/audit"
	"github.com/kvcheck/kvcheck/internal/finding"
)

// Source is where kvcheck simulate reads its trace: a trace file (Trace), a request log
// (Requests, "-" reading Stdin) or tap recordings (Recordings); one of them is set.
type Source struct {
	// Trace is read in Format (auto, mooncake, azure) with BlockSize (0: the format's own).
	Trace     string
	Format    string
	BlockSize int
	// MaxRefs is the most block references any source may expand to (0: MaxBlockRefs), and
	// MaxTraceRequests the most requests (0: MaxRequests): --max-block-refs and
	// --max-trace-requests.
	MaxRefs, MaxTraceRequests int
	// Requests is tokenized as kvcheck audit does: through Remote when it is set (its block
	// size replaces BlockSize), else estimated. RequestLog gives the rest of the options;
	// its BlockSize, OutputTokens and Progress are set from Source.
	Requests   string
	Stdin      io.Reader
	RequestLog RequestLogOptions
	Remote     *audit.Remote
	Recordings []string
	// OutputTokens is the output length of requests that do not give one.
	OutputTokens int
}

// Status is where reading a request log reports progress (report.Status is one).
type Status interface {
	Progress(format string, args ...any)
	Done()
}

// Load reads the trace from the source, with the findings about the source itself (a
// --tokenize server with prefix caching off). A trace format that cannot be told is a
// *FormatError.
func (s Source) Load(ctx context.Context, st Status) (*Trace, []finding.Finding, error) {
	switch {
	case s.Requests != "":
		ro := s.RequestLog
		ro.BlockSize, ro.OutputTokens, ro.MaxBlockRefs, ro.MaxTraceRequests = s.BlockSize, s.OutputTokens, s.MaxRefs, s.MaxTraceRequests
		ro.Progress = func(n int) { st.Progress("reading %d requests", n) }
		tr, fs, err := ReadRequestFile(ctx, s.Requests, s.Stdin, ro, s.Remote)
		st.Done()
		return tr, fs, err
	case len(s.Recordings) > 0:
		tr, err := ReadRecordingFiles(ctx, s.Recordings, RecordingOptions{OutputTokens: s.OutputTokens, MaxBlockRefs: s.MaxRefs, MaxTraceRequests: s.MaxTraceRequests})
		return tr, nil, err
	}
	tr, err := ReadTraceFileLimit(s.Trace, s.Format, s.BlockSize, Limits{BlockRefs: s.MaxRefs, Requests: s.MaxTraceRequests})
	return tr, nil, err
}

// RunReport runs the sweep over the trace and builds its report, the findings about the
// source (Load's) first, then one cannot-run finding (info, like no-prefix-info: a fact about
// the source, not a verdict) for each policy that cannot run on this trace, saying why; such a
// policy has no row.
func RunReport(ctx context.Context, t *Trace, s Sweep, sourceFindings []finding.Finding) (Report, error) {
	results, cannot, err := run(ctx, t, s, nil)
	if err != nil {
		return Report{}, err
	}
	rep := NewReport(t, SiblingStats(t, s.Base.Siblings), s, results)
	for _, c := range cannot {
		sourceFindings = append(sourceFindings, finding.Finding{Severity: finding.Info, Code: "cannot-run", Subject: c.Policy, Message: c.Error()})
	}
	rep.Findings = append(sourceFindings, rep.Findings...)
	return rep, nil
}

// CapacityError is a per-replica KV capacity in tokens smaller than one block of the trace.
type CapacityError struct{ Tokens, BlockSize int }

func (e *CapacityError) Error() string {
	return fmt.Sprintf("%d tokens is less than one %d-token block", e.Tokens, e.BlockSize)
}

// KVBlocks converts per-replica KV capacities in tokens to whole blocks of blockSize tokens;
// a capacity below one block is a *CapacityError.
func KVBlocks(tokens []int, blockSize int) ([]int, error) {
	out := make([]int, len(tokens))
	for i, t := range tokens {
		if t < blockSize {
			return nil, &CapacityError{Tokens: t, BlockSize: blockSize}
		}
		out[i] = t / blockSize
	}
	return out, nil
}

// AfterEnd says whether at (a time into the trace) falls after the trace's last arrival, when
// a replica added then would see no request, and gives that arrival cut to the millisecond.
func (t *Trace) AfterEnd(at time.Duration) (after bool, last time.Duration) {
	end := t.Requests[len(t.Requests)-1].Arrival
	return at.Seconds() > end, time.Duration(end * float64(time.Second)).Truncate(time.Millisecond)
}
