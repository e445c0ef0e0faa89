package promql

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"iter"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

var (
	logEngine = regexp.MustCompile(`Engine (\d+):`)
	logV0Hit  = regexp.MustCompile(`Prefix cache hit rate: GPU: ([0-9.]+)%, CPU: ([0-9.]+)%`)
	// vLLM logs this once at start-up for hybrid (Mamba/linear-attention) models, whose
	// attention block is raised to cover a Mamba state page (vllm/platforms/interface.py).
	logHybridBlock = regexp.MustCompile(`Setting attention block size to (\d+) tokens to ensure that attention page size is >= mamba page size`)
)

// maxLogLine bounds the part of a log line that is kept. Stat lines are a few hundred bytes;
// longer lines (a request's prompt logged by --enable-log-requests can be megabytes) are
// skipped, so memory stays at one buffer of this size.
const maxLogLine = 64 << 10

// logLines yields the log's lines without their line end, skipping lines longer than
// maxLogLine. A read error ends the sequence and is stored in *errp.
func logLines(r io.Reader, errp *error) iter.Seq[string] {
	return func(yield func(string) bool) {
		br := bufio.NewReaderSize(r, maxLogLine)
		for {
			raw, err := br.ReadSlice('\n')
			if err == bufio.ErrBufferFull {
				for err == bufio.ErrBufferFull {
					_, err = br.ReadSlice('\n')
				}
				raw = nil
			}
			if len(raw) > 0 && !yield(strings.TrimRight(string(raw), "\r\n")) {
				return
			}
			if err != nil {
				if err != io.EOF {
					*errp = err
				}
				return
			}
		}
	}
}

// engineLog keeps one engine's latest stat line, so memory stays constant however long the log
// is. Every figure of a row comes from that one line: one time base per row (a mean over the
// whole log next to the latest hit rate would mix two).
type engineLog struct {
	id            string
	v0            bool
	lines         int
	prompt        *float64
	hit, cpuHit   *float64
	ext           *float64
	kv            *float64
	running, wait *float64
}

// LogStats are the per-engine figures read from a log, in order of first appearance.
type LogStats struct {
	Source  string
	engines []*engineLog
	// Skipped counts stat lines with a field that did not parse.
	Skipped int
	// HybridBlock is the attention block size a hybrid model's start-up line set; 0 when the
	// log has no such line.
	HybridBlock int
}

// ParseLog reads vLLM engine stat lines (SPEC §3.5): the V1 "Engine NNN: Avg prompt
// throughput ... Prefix cache hit rate" line and V0's throughput line with its separate
// "Prefix cache hit rate: GPU: x%, CPU: y%" line. Other lines are ignored.
func ParseLog(r io.Reader, source string) (LogStats, error) {
	st := LogStats{Source: source}
	byID := map[string]*engineLog{}
	get := func(id string, v0 bool) *engineLog {
		e := byID[id]
		if e == nil {
			e = &engineLog{id: id, v0: v0}
			byID[id] = e
			st.engines = append(st.engines, e)
		}
		return e
	}
	var readErr error
	for line := range logLines(r, &readErr) {
		if m := logHybridBlock.FindStringSubmatch(line); m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil && n > 0 {
				st.HybridBlock = n
			}
			continue
		}
		if m := logV0Hit.FindStringSubmatch(line); m != nil {
			e := get("", true)
			gpu, err1 := strconv.ParseFloat(m[1], 64)
			cpu, err2 := strconv.ParseFloat(m[2], 64)
			if err1 != nil || err2 != nil || !finite(gpu) || !finite(cpu) {
				st.Skipped++
				continue
			}
			e.hit, e.cpuHit = ptr(gpu/100), ptr(cpu/100)
			continue
		}
		i := strings.Index(line, "Avg prompt throughput:")
		if i < 0 {
			continue
		}
		id, v0 := "", true
		if m := logEngine.FindStringSubmatch(line); m != nil {
			id, v0 = m[1], false
		}
		e := get(id, v0)
		if err := e.parseFields(line[i:]); err != nil {
			st.Skipped++
			continue
		}
		e.lines++
	}
	if err := readErr; err != nil {
		return st, fmt.Errorf("%s: %w", source, err)
	}
	n := 0
	for _, e := range st.engines {
		n += e.lines
	}
	if n == 0 {
		return st, fmt.Errorf("%s: no vLLM engine stat lines (\"Avg prompt throughput: ...\") found: is it a vLLM server log at INFO level?", source)
	}
	return st, nil
}

// parseFields reads "Key: value, Key: value" pairs; unknown keys are skipped, so lines from
// newer versions with more fields still parse.
func (e *engineLog) parseFields(s string) error {
	for _, part := range strings.Split(strings.TrimSpace(s), ", ") {
		k, v, ok := strings.Cut(part, ": ")
		if !ok {
			continue
		}
		v = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "."))
		num := func(unit string) (float64, error) {
			x, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(v, unit)), 64)
			if err != nil || !finite(x) {
				return 0, fmt.Errorf("field %q: value %q", k, v)
			}
			return x, nil
		}
		var err error
		var x float64
		switch strings.TrimSpace(k) {
		case "Avg prompt throughput":
			if x, err = num("tokens/s"); err == nil {
				e.prompt = ptr(x)
			}
		case "Running":
			if x, err = num("reqs"); err == nil {
				e.running = ptr(x)
			}
		case "Waiting", "Pending":
			if x, err = num("reqs"); err == nil {
				e.wait = ptr(x)
			}
		case "GPU KV cache usage", "KV cache usage":
			if x, err = num("%"); err == nil {
				e.kv = ptr(x / 100)
			}
		case "Prefix cache hit rate":
			if x, err = num("%"); err == nil {
				e.hit = ptr(x / 100)
			}
		case "External prefix cache hit rate":
			if x, err = num("%"); err == nil {
				e.ext = ptr(x / 100)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// FromLogs reads engine logs into an Input: one replica per engine per file, with the figures
// of its latest stat line (no window: vLLM averages the line's throughput since its previous
// line and its hit rate over recent requests).
func FromLogs(ctx context.Context, paths []string) (Input, error) {
	in := Input{Source: SourceLog, Mode: ModeLog, Inputs: paths}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return in, fmt.Errorf("read log: %w", err)
		}
		st, err := ParseLog(ctxReader{ctx, f}, p)
		_ = f.Close() // opened for reading: a close error loses nothing
		if err != nil {
			return in, err
		}
		in.Observations = append(in.Observations, st.Observations(dumpName(p))...)
	}
	return in, nil
}

// Observations returns one observation per engine, named "<name>/engine<id>" (V1) or
// "<name>" (V0, which logs no engine id).
func (st LogStats) Observations(name string) []Observation {
	var out []Observation
	for _, e := range st.engines {
		if e.lines == 0 {
			continue
		}
		o := Observation{
			Replica:      name,
			GaugeHitRate: e.hit, CPUHitRate: e.cpuHit, GaugeExtHitRate: e.ext,
			KVUsage: e.kv, Running: e.running, Waiting: e.wait,
			PromptTokensPerSec: e.prompt,
			BlockSize:          st.HybridBlock, MambaBlockSize: st.HybridBlock,
		}
		if e.id != "" {
			o.Replica = name + "/engine" + e.id
		}
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b Observation) int { return strings.Compare(a.Replica, b.Replica) })
	return out
}
