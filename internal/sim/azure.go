package sim

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// azureTime is the TIMESTAMP layout of the Azure LLM inference traces (100 ns resolution).
const azureTime = "2006-01-02 15:04:05.9999999"

// uniqueKeyBase starts the keys made up for lengths-only traces: 0, 1, 2, ..., each once, so
// that they never collide with each other and intern numbers them through its dense slice (4
// bytes a key while it runs), not a map.
const uniqueKeyBase = uint64(0)

// ReadAzure reads a CSV trace with lengths only, like the Azure LLM inference traces
// (TIMESTAMP, ContextTokens, GeneratedTokens). There is no prefix information: every block gets a
// key of its own, so the trace is the unique-prefix case. blockSize is the fleet's block size.
// A trace of more than MaxRequests rows or MaxBlockRefs blocks is an error (a short CSV line can
// claim a huge prompt, and each block costs 12 bytes in memory).
func ReadAzure(r io.Reader, name string, blockSize int) (*Trace, error) {
	return readAzure(r, name, blockSize, Limits{})
}

func readAzure(r io.Reader, name string, blockSize int, lim Limits) (*Trace, error) {
	lim = lim.orDefault()
	if blockSize <= 0 {
		return nil, fmt.Errorf("azure trace %s: block size %d must be positive", name, blockSize)
	}
	cr := csv.NewReader(&lineLimit{r: r, max: maxLine})
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("azure trace %s: empty file", name)
		}
		return nil, fmt.Errorf("azure trace %s: header: %w", name, err)
	}
	header = slices.Clone(header) // ReuseRecord: the next Read overwrites it
	col := map[string]int{}
	for i, h := range header {
		col[strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))] = i
	}
	need := []string{"timestamp", "contexttokens", "generatedtokens"}
	idx := make([]int, len(need))
	for i, n := range need {
		c, ok := col[n]
		if !ok {
			return nil, fmt.Errorf("azure trace %s: no %s column in header %s: want TIMESTAMP,ContextTokens,GeneratedTokens", name, n, clip(strings.Join(header, ",")))
		}
		idx[i] = c
	}
	t := &Trace{Name: name, Format: "azure", BlockSize: blockSize, maxRequests: lim.Requests}
	var unused []string
	for i, h := range header {
		if !slices.Contains(idx, i) {
			unused = append(unused, clip(h))
		}
	}
	switch {
	case len(unused) > 5:
		t.Notes = append(t.Notes, fmt.Sprintf("%d columns are not used by the simulator (%s, ...)", len(unused), strings.Join(unused[:5], ", ")))
	case len(unused) > 0:
		for _, h := range unused {
			t.Notes = append(t.Notes, fmt.Sprintf("column %s is not used by the simulator", h))
		}
	}
	var (
		start time.Time
		keys  []uint64
		next  = uniqueKeyBase
	)
	type span struct{ from, to int }
	var spans []span
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("azure trace %s: %w", name, err)
		}
		if len(rec) != len(header) {
			return nil, fmt.Errorf("azure trace %s line %d: %d fields, header has %d", name, line, len(rec), len(header))
		}
		ts, err := time.Parse(azureTime, strings.TrimSpace(rec[idx[0]]))
		if err != nil {
			return nil, fmt.Errorf("azure trace %s line %d: timestamp %s: want YYYY-MM-DD hh:mm:ss.fffffff", name, line, clip(rec[idx[0]]))
		}
		in, err1 := strconv.Atoi(strings.TrimSpace(rec[idx[1]]))
		out, err2 := strconv.Atoi(strings.TrimSpace(rec[idx[2]]))
		if err1 != nil || err2 != nil || in < 0 || out < 0 || in > maxTokens || out > maxTokens {
			return nil, fmt.Errorf("azure trace %s line %d: token counts %s, %s: want non-negative integers of at most %d", name, line, clip(rec[idx[1]]), clip(rec[idx[2]]), maxTokens)
		}
		where := fmt.Sprintf("azure trace %s line %d", name, line)
		if len(t.Requests) >= lim.Requests {
			return nil, requestsLimitError(where, lim.Requests, "simulate a part of the trace (head -n N)")
		}
		if len(spans) == 0 {
			start = ts
		}
		if len(keys)+(in+blockSize-1)/blockSize > lim.BlockRefs {
			return nil, refsLimitError(fmt.Sprintf("%s (blocks of %d tokens)", where, blockSize), lim.BlockRefs, "use a larger --block-size or simulate a part of the trace (head -n N)")
		}
		from := len(keys)
		for range (in + blockSize - 1) / blockSize {
			keys = append(keys, next)
			next++
		}
		spans = append(spans, span{from, len(keys)})
		t.Requests = append(t.Requests, Request{
			Arrival:      ts.Sub(start).Seconds(),
			InputTokens:  in,
			OutputTokens: out,
			N:            1,
		})
	}
	if len(t.Requests) == 0 {
		return nil, fmt.Errorf("azure trace %s: no requests after the header", name)
	}
	for i, s := range spans {
		t.Requests[i].Blocks = keys[s.from:s.to:s.to]
	}
	if t.sortByArrival() {
		// Arrivals before the first row are negative; shift so the trace starts at 0.
		first := t.Requests[0].Arrival
		for i := range t.Requests {
			t.Requests[i].Arrival -= first
		}
		t.Notes = append(t.Notes, "timestamps were not in order; requests were sorted by timestamp")
	}
	t.Notes = append(t.Notes, "lengths only: no prefix information, every block is unique (the unique-prefix case), so no policy can hit")
	return t, nil
}

// clip quotes a field of the input for a message, cut to its first 64 bytes: a message names
// what is wrong, it does not echo a line of megabytes to stderr.
func clip(s string) string {
	if len(s) <= 64 {
		return strconv.Quote(s)
	}
	return strconv.Quote(strings.ToValidUTF8(s[:64], "")) + fmt.Sprintf("... (%d bytes)", len(s))
}

// errLineTooLong is returned by lineLimit for a line longer than its bound.
var errLineTooLong = fmt.Errorf("a line longer than %d MiB: not a CSV trace (its rows are a few dozen bytes)", maxLine>>20)

// lineLimit fails a read once a line runs past max bytes, so a file without line ends cannot
// make the CSV reader, which holds a whole line, take memory without limit.
type lineLimit struct {
	r        io.Reader
	max, cur int
}

func (l *lineLimit) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	b := p[:n]
	if first := bytes.IndexByte(b, '\n'); first < 0 {
		l.cur += n
	} else {
		if l.cur+first > l.max {
			return 0, errLineTooLong
		}
		l.cur = n - bytes.LastIndexByte(b, '\n') - 1
		// Lines wholly inside b are shorter than b, and b is far shorter than the bound.
	}
	if l.cur > l.max {
		return 0, errLineTooLong
	}
	return n, err
}
