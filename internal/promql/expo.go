package promql

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Dump is one parsed exposition: a /metrics response or a saved file.
type Dump struct {
	// Source names the input (a URL or a file path) in messages.
	Source string
	// Time is when a scrape was answered; zero for files.
	Time time.Time
	// Version is the vLLM version from GET /version, when known.
	Version string
	Samples []Sample
}

// Sample is one series' value.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
	// TimestampMs is the sample's own timestamp, 0 when the exposition gave none.
	TimestampMs int64
}

// maxExpositionBytes bounds what is read from one /metrics response or dump: a vLLM replica's
// exposition is tens of kilobytes, so 64 MiB leaves room for federation dumps of big fleets.
const maxExpositionBytes = 64 << 20

// ParseExposition reads Prometheus text exposition (vLLM's /metrics). Only vllm: series are
// kept. It fails, naming source, on malformed text or when no vllm: series is present.
func ParseExposition(r io.Reader, source string) (Dump, error) {
	d := Dump{Source: source}
	lr := &io.LimitedReader{R: r, N: maxExpositionBytes + 1}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(&lfReader{br: bufio.NewReader(lr)})
	if lr.N <= 0 {
		return d, fmt.Errorf("%s: larger than %d MiB: not a single replica's /metrics", source, maxExpositionBytes>>20)
	}
	if err != nil {
		var pe expfmt.ParseError
		if errors.As(err, &pe) {
			return d, fmt.Errorf("%s: line %d: %s: is this Prometheus text exposition (vLLM's /metrics)?", source, pe.Line, pe.Msg)
		}
		return d, fmt.Errorf("%s: %w", source, err)
	}
	var others []string
	for _, name := range slices.Sorted(maps.Keys(fams)) {
		if !strings.HasPrefix(name, "vllm:") {
			others = append(others, name)
			continue
		}
		f := fams[name]
		for _, m := range f.GetMetric() {
			var v float64
			switch {
			case m.Counter != nil:
				v = m.GetCounter().GetValue()
			case m.Gauge != nil:
				v = m.GetGauge().GetValue()
			case m.Untyped != nil:
				v = m.GetUntyped().GetValue()
			default:
				continue // histograms and summaries carry nothing hitrate reads
			}
			d.Samples = append(d.Samples, Sample{Name: name, Labels: labelMap(m.GetLabel()), Value: v, TimestampMs: m.GetTimestampMs()})
		}
	}
	if len(d.Samples) == 0 {
		return d, fmt.Errorf("%s: no vllm: metrics found%s: is this a vLLM /metrics endpoint or dump?", source, renamedHint(others))
	}
	return d, nil
}

// lfReader turns CRLF line ends into LF: a dump saved on Windows or through some tools has
// them, and the exposition parser takes the \r for part of the value or type. Lines longer
// than the buffer pass through in pieces, unchanged.
type lfReader struct {
	br   *bufio.Reader
	line []byte // the rest of the current line, valid until the next read from br
	err  error
}

func (l *lfReader) Read(p []byte) (int, error) {
	for len(l.line) == 0 {
		if l.err != nil {
			return 0, l.err
		}
		line, err := l.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			err = nil
		}
		if n := len(line); n >= 2 && line[n-2] == '\r' && line[n-1] == '\n' {
			line[n-2], line = '\n', line[:n-1]
		}
		l.line, l.err = line, err
	}
	n := copy(p, l.line)
	l.line = l.line[n:]
	return n, nil
}

// renamedHint recognises vLLM metrics exported under other names (SPEC §3.4).
func renamedHint(names []string) string {
	for _, n := range names {
		for _, p := range []string{"vllm_", "ray_vllm_"} {
			if strings.HasPrefix(n, p) {
				return fmt.Sprintf(" (found %s: hitrate reads vLLM's own vllm: names, not re-exported ones)", n)
			}
		}
	}
	if len(names) == 0 {
		return " (the input is empty)"
	}
	return fmt.Sprintf(" (%d other metric families, such as %s)", len(names), names[0])
}

func labelMap(ls []*dto.LabelPair) map[string]string {
	m := make(map[string]string, len(ls))
	for _, l := range ls {
		m[l.GetName()] = l.GetValue()
	}
	return m
}

func seriesKey(s Sample) string {
	var b strings.Builder
	b.WriteString(s.Name)
	for _, k := range slices.Sorted(maps.Keys(s.Labels)) {
		b.WriteString("\xff" + k + "=" + s.Labels[k])
	}
	return b.String()
}

func isCounter(name string) bool {
	mn, ok := lookupName(name)
	return ok && mn.counter
}

// totals turns one dump into points holding lifetime totals.
func totals(d Dump) []point {
	out := make([]point, 0, len(d.Samples))
	for _, s := range d.Samples {
		out = append(out, point{name: s.Name, labels: s.Labels, value: s.Value})
	}
	return out
}

// increase turns two dumps of the same replicas into points: counters give their increase from
// a to b (a counter that went down restarted from zero, so its increase is its new value),
// gauges their value in b. Counter series missing from a are left out, as Prometheus's rate()
// needs two samples.
func increase(a, b Dump) []point {
	before := make(map[string]float64, len(a.Samples))
	for _, s := range a.Samples {
		before[seriesKey(s)] = s.Value
	}
	out := make([]point, 0, len(b.Samples))
	for _, s := range b.Samples {
		if !isCounter(s.Name) {
			out = append(out, point{name: s.Name, labels: s.Labels, value: s.Value})
			continue
		}
		prev, ok := before[seriesKey(s)]
		if !ok {
			continue
		}
		p := point{name: s.Name, labels: s.Labels, value: s.Value - prev}
		if math.IsNaN(prev) || math.IsInf(prev, 0) {
			p.value = prev
		} else if s.Value < prev {
			p.value, p.resets = s.Value, 1
		}
		out = append(out, p)
	}
	return out
}

// sampleTime returns the latest sample timestamp in d, or zero when the dump has none.
func sampleTime(d Dump) time.Time {
	var ms int64
	for _, s := range d.Samples {
		ms = max(ms, s.TimestampMs)
	}
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}
