package promql

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kvcheck/kvcheck/internal/router"
	"github.com/kvcheck/kvcheck/internal/router/product"
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
	// Stacks are the router products whose own metric families the input holds (routerStackOf),
	// each with the first family of it seen; at most one a product.
	Stacks []RouterStack
}

// RouterStack is a router product a metrics input shows, and the metric family that showed it.
type RouterStack struct {
	// Product is the product's id as internal/router names it.
	Product string
	Family  string
}

// routerFamily is a router product's own metric family name prefix.
type routerFamily struct{ prefix, product string }

// routerFamilies are the router products' own metric families by name prefix, as each
// product declares them (product.Metered): promql names no product.
var routerFamilies = sync.OnceValue(func() []routerFamily {
	var out []routerFamily
	for _, p := range router.Products() {
		if m, ok := p.(product.Metered); ok {
			for _, f := range m.Metrics().Families {
				out = append(out, routerFamily{f, p.Name().ID})
			}
		}
	}
	return out
})

// serverLabelRouter is the router product whose router re-exports the engines' vllm: series
// with a server label (product.Metrics.ServerLabel; Report.RouterSeries), zero when none does.
var serverLabelRouter = sync.OnceValue(func() product.Name {
	for _, p := range router.Products() {
		if m, ok := p.(product.Metered); ok && m.Metrics().ServerLabel {
			return p.Name()
		}
	}
	return product.Name{}
})

// routerStackOf is the router product whose metric family name is, "" for none.
func routerStackOf(name string) string {
	for _, f := range routerFamilies() {
		if strings.HasPrefix(name, f.prefix) {
			return f.product
		}
	}
	return ""
}

// addStack adds product, shown by family, to stacks unless it is there.
func addStack(stacks []RouterStack, product, family string) []RouterStack {
	if product == "" || slices.ContainsFunc(stacks, func(s RouterStack) bool { return s.Product == product }) {
		return stacks
	}
	return append(stacks, RouterStack{Product: product, Family: family})
}

// Sample is one series' value.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
	// TimestampMs is the sample's own timestamp, 0 when the exposition gave none.
	TimestampMs int64
}

// Limits of one exposition (a /metrics answer or a saved dump). The reader streams: it holds
// one line, one block of vllm: lines and the vllm: samples kept so far, never the whole text;
// lines of other metric families are looked at once and dropped.
const (
	// maxExpositionBytes bounds what is read: a vLLM replica's exposition is tens of kilobytes,
	// so 64 MiB leaves room for federation dumps of big fleets.
	maxExpositionBytes = 64 << 20
	// maxExpositionLine bounds one line; a vLLM line is a few hundred bytes.
	maxExpositionLine = 1 << 20
	// parseBlock is how many bytes of vllm: lines are handed to the text parser at once: its
	// parsed form takes several times the text, so parsing block by block bounds it.
	parseBlock = 256 << 10
	// MaxScrapeSeries bounds the vllm: series kept from one scrape target, a single replica
	// (vLLM exposes a few hundred, a few thousand with many engines or LoRA adapters).
	MaxScrapeSeries = 1 << 16
	// MaxDumpSeries bounds the vllm: series kept from a dump file, which may be a federation
	// dump of a whole fleet.
	MaxDumpSeries = 1 << 21
)

// parseSlots bounds the blocks parsed at once across all readers (concurrent scrapes): the
// parsed form of a block is the largest thing a reader holds, and parsing is CPU work, so more
// at once than there are CPUs gains nothing.
var parseSlots = make(chan struct{}, runtime.GOMAXPROCS(0))

// ParseExposition reads Prometheus text exposition (vLLM's /metrics). Only vllm: series are
// kept, at most MaxDumpSeries. It fails, naming source, on malformed text or when no vllm:
// series is present.
func ParseExposition(r io.Reader, source string) (Dump, error) {
	return parseExposition(r, source, MaxDumpSeries)
}

// parseExposition reads an exposition keeping at most maxSeries vllm: series.
func parseExposition(r io.Reader, source string, maxSeries int) (Dump, error) {
	return readExposition(r, source, maxSeries, nil)
}

// readExposition reads an exposition keeping at most maxSeries vllm: series. With project set
// (a dump file, which may hold a whole fleet), a family hitrate does not read is kept as one
// sample per distinct value of the labels in project, those labels only: all that hitrate
// takes from such a family is that the replica exports it, and the replica's model, version or
// router. Label maps with the same labels are shared.
func readExposition(r io.Reader, source string, maxSeries int, project []string) (Dump, error) {
	x := expoReader{d: Dump{Source: source}, maxSeries: maxSeries, project: project}
	if project != nil {
		x.present, x.labelSets = map[string]int{}, map[string]map[string]string{}
	}
	lr := &io.LimitedReader{R: r, N: maxExpositionBytes + 1}
	br := bufio.NewReaderSize(lr, 64<<10)
	if err := skipBOM(br, source); err != nil {
		return x.d, err
	}
	var err error
	for err == nil {
		var line []byte
		line, err = readLine(br, x.line+1)
		if lr.N <= 0 {
			return x.d, fmt.Errorf("%s: larger than %d MiB: not a single replica's /metrics", source, maxExpositionBytes>>20)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			break
		}
		if len(line) == 0 && errors.Is(err, io.EOF) {
			break
		}
		x.line++
		if perr := x.add(line); perr != nil {
			return x.d, perr
		}
	}
	if err != nil && !errors.Is(err, io.EOF) {
		var ll *lineTooLong
		if errors.As(err, &ll) {
			return x.d, fmt.Errorf("%s: line %d is longer than %d KiB: is this Prometheus text exposition (vLLM's /metrics)?", source, ll.line, maxExpositionLine>>10)
		}
		return x.d, fmt.Errorf("%s: %w", source, err)
	}
	if err := x.flush(); err != nil {
		return x.d, err
	}
	if len(x.d.Samples) == 0 && x.histogram != "" {
		return x.d, fmt.Errorf("%s: only vllm: histograms or summaries, such as %s: hitrate reads the prefix-cache counters and gauges (vllm:prefix_cache_queries_total, vllm:prefix_cache_hits_total, vllm:kv_cache_usage_perc, ...); save the whole /metrics, or widen the federation match[] or relabelling that kept histograms only", source, x.histogram)
	}
	if len(x.d.Samples) == 0 {
		return x.d, fmt.Errorf("%s: no vllm: metrics found%s: is this a vLLM /metrics endpoint or dump?", source, x.others.hint())
	}
	x.d.Stacks = x.others.stacks
	// Families in name order, series in the order given, as the whole-text parser gave them.
	slices.SortStableFunc(x.d.Samples, func(a, b Sample) int { return strings.Compare(a.Name, b.Name) })
	return x.d, nil
}

// skipBOM reads past a UTF-8 byte order mark at the start (a dump saved by PowerShell's
// Out-File or Notepad has one), and refuses UTF-16 text (PowerShell 5's default encoding for
// Out-File and ">") by name, rather than as a line that is "not a sample".
func skipBOM(br *bufio.Reader, source string) error {
	b, _ := br.Peek(3)
	switch {
	case bytes.HasPrefix(b, []byte{0xef, 0xbb, 0xbf}):
		_, _ = br.Discard(3) // peeked: the bytes are buffered
	case bytes.HasPrefix(b, []byte{0xff, 0xfe}), bytes.HasPrefix(b, []byte{0xfe, 0xff}):
		return fmt.Errorf("%s: saved as UTF-16 text (PowerShell 5's Out-File or > writes it): save the dump as UTF-8 (Out-File -Encoding utf8, or curl -o FILE)", source)
	}
	return nil
}

type lineTooLong struct{ line int }

func (e *lineTooLong) Error() string { return fmt.Sprintf("line %d too long", e.line) }

// readLine returns the next line with its end (LF; a CRLF end becomes LF, as a dump saved on
// Windows has them and the text parser would take the \r for part of the value). The line is
// valid until the next call.
func readLine(br *bufio.Reader, n int) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		buf := append([]byte(nil), line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			if len(buf) > maxExpositionLine {
				return nil, &lineTooLong{n}
			}
			line, err = br.ReadSlice('\n')
			buf = append(buf, line...)
		}
		line = buf
	}
	if len(line) > maxExpositionLine {
		return nil, &lineTooLong{n}
	}
	if k := len(line); k >= 2 && line[k-2] == '\r' && line[k-1] == '\n' {
		line[k-2], line = '\n', line[:k-1]
	}
	return line, err
}

// expoReader collects the vllm: lines of an exposition into blocks for the text parser.
type expoReader struct {
	d         Dump
	maxSeries int
	line      int // lines read
	block     []byte
	blockLine int    // the line number of the block's first line
	typeLine  []byte // the # TYPE line of the family being collected, for a block cut inside it
	extra     int    // 1 when the block starts with a repeated # TYPE line
	family    string // the family of the last # HELP or # TYPE line
	keep      bool   // the family of the last line is a vllm: one
	others    otherFamilies
	// histogram is the first vllm: histogram or summary family read, whose samples are not kept.
	histogram string
	// project lists the labels kept of the families hitrate does not read (nil: keep every
	// series whole); present maps a family and those labels to its sample, labelSets a label
	// set's key to its shared map.
	project   []string
	present   map[string]int
	labelSets map[string]map[string]string
	key       []byte
	proj      []*dto.LabelPair
}

// otherFamilies remembers enough of the families that are not vllm: ones to say what the input
// is when it has no vllm: series.
type otherFamilies struct {
	n       int
	first   string
	renamed string // a vLLM metric re-exported under another name (SPEC §3.4)
	last    string
	stacks  []RouterStack
}

func (o *otherFamilies) add(name string) {
	if name == o.last {
		return
	}
	o.last = name
	o.n++
	o.stacks = addStack(o.stacks, routerStackOf(name), name)
	if o.first == "" || name < o.first {
		o.first = name
	}
	if o.renamed == "" && (strings.HasPrefix(name, "vllm_") || strings.HasPrefix(name, "ray_vllm_")) {
		o.renamed = name
	}
}

// hint recognises vLLM metrics exported under other names (SPEC §3.4).
func (o *otherFamilies) hint() string {
	switch {
	case o.renamed != "":
		return fmt.Sprintf(" (found %s: hitrate reads vLLM's own vllm: names, not re-exported ones)", o.renamed)
	case o.n == 0:
		return " (the input is empty)"
	}
	return fmt.Sprintf(" (%d other metric families, such as %s)", o.n, o.first)
}

// add takes one line (with its LF, or without at the end of the input).
func (x *expoReader) add(line []byte) error {
	text := bytes.TrimSpace(line)
	switch {
	case len(text) == 0:
		return nil
	case text[0] == '#':
		f := bytes.Fields(text)
		if len(f) < 3 || (string(f[1]) != "HELP" && string(f[1]) != "TYPE") {
			if x.keep {
				return x.append(line)
			}
			return nil
		}
		name := string(f[2])
		if name != x.family && len(x.block) >= parseBlock {
			if err := x.flush(); err != nil {
				return err
			}
		}
		if name != x.family {
			x.typeLine = nil
		}
		x.family = name
		x.keep = strings.HasPrefix(name, "vllm:")
		if !x.keep {
			x.others.add(name)
			return nil
		}
		if string(f[1]) == "TYPE" {
			x.typeLine = append(x.typeLine[:0], line...)
		}
		return x.append(line)
	}
	name, ok := sampleName(text)
	if !ok {
		return fmt.Errorf("%s: line %d: not a sample or comment line: is this Prometheus text exposition (vLLM's /metrics)?", x.d.Source, x.line)
	}
	if x.family == "" || !strings.HasPrefix(name, x.family) {
		// A sample of another family, without # lines of its own (untyped).
		x.family, x.typeLine = name, nil
		x.keep = strings.HasPrefix(name, "vllm:")
		if !x.keep {
			x.others.add(name)
		}
	}
	if !x.keep {
		return nil
	}
	if len(x.block) >= parseBlock {
		// A family longer than a block: the next block starts with its # TYPE line again, so
		// its samples keep their type.
		if err := x.flush(); err != nil {
			return err
		}
		if x.typeLine != nil {
			x.block = append(x.block, x.typeLine...)
			x.blockLine, x.extra = x.line, 1
		}
	}
	return x.append(line)
}

func (x *expoReader) append(line []byte) error {
	if len(x.block) == 0 {
		x.blockLine = x.line
	}
	x.block = append(x.block, line...)
	if line[len(line)-1] != '\n' {
		x.block = append(x.block, '\n')
	}
	return nil
}

// sampleName returns the metric name a sample line starts with: a plain name, or a quoted
// one inside the braces (UTF-8 names).
func sampleName(text []byte) (string, bool) {
	end := bytes.IndexAny(text, "{ \t")
	if end < 0 {
		return "", false
	}
	name := text[:end]
	if len(name) == 0 && text[0] == '{' {
		rest := bytes.TrimSpace(text[1:])
		if len(rest) > 1 && rest[0] == '"' {
			if q := bytes.IndexByte(rest[1:], '"'); q >= 0 {
				return string(rest[1 : q+1]), true
			}
		}
		return "", false
	}
	for i, c := range name {
		ok := c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9')
		if !ok {
			return "", false
		}
	}
	return string(name), true
}

// flush parses the collected block and keeps its samples.
func (x *expoReader) flush() error {
	if len(x.block) == 0 {
		return nil
	}
	parseSlots <- struct{}{}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(x.block))
	<-parseSlots
	first, extra := x.blockLine, x.extra
	x.block, x.extra = x.block[:0], 0
	if err != nil {
		var pe expfmt.ParseError
		if errors.As(err, &pe) {
			return fmt.Errorf("%s: line %d: %s: is this Prometheus text exposition (vLLM's /metrics)?", x.d.Source, first+pe.Line-1-extra, pe.Msg)
		}
		return fmt.Errorf("%s: %w", x.d.Source, err)
	}
	for _, name := range slices.Sorted(maps.Keys(fams)) {
		if !strings.HasPrefix(name, "vllm:") {
			continue
		}
		for _, m := range fams[name].GetMetric() {
			var v float64
			switch {
			case m.Counter != nil:
				v = m.GetCounter().GetValue()
			case m.Gauge != nil:
				v = m.GetGauge().GetValue()
			case m.Untyped != nil:
				v = m.GetUntyped().GetValue()
			default:
				// Histograms and summaries carry nothing hitrate reads; a dump of nothing
				// else is named so in the error.
				if x.histogram == "" {
					x.histogram = name
				}
				continue
			}
			labels := m.GetLabel()
			if x.project != nil && name != configInfo {
				if !readFamily(name) {
					x.proj = projectLabels(x.proj[:0], labels, x.project)
					labels = x.proj
					x.key = append(append(x.key[:0], name...), 0xff)
					x.key = appendLabelKey(x.key, labels)
					if i, ok := x.present[string(x.key)]; ok {
						x.d.Samples[i].TimestampMs = max(x.d.Samples[i].TimestampMs, m.GetTimestampMs())
						continue
					}
					x.present[string(x.key)] = len(x.d.Samples)
					v = 0 // hitrate reads no value of this family
				}
			}
			if len(x.d.Samples) >= x.maxSeries {
				return fmt.Errorf("%s: more than %d vllm: series: not a single replica's /metrics (a federation dump of a whole fleet? save it to a file and use --file)", x.d.Source, x.maxSeries)
			}
			x.d.Samples = append(x.d.Samples, Sample{Name: name, Labels: x.labelMap(labels), Value: v, TimestampMs: m.GetTimestampMs()})
		}
	}
	return nil
}

// labelMap returns ls as a map, shared with every other series of the same labels when the
// reader shares them.
func (x *expoReader) labelMap(ls []*dto.LabelPair) map[string]string {
	if x.labelSets == nil {
		return labelMap(ls)
	}
	x.key = appendLabelKey(x.key[:0], ls)
	if m, ok := x.labelSets[string(x.key)]; ok {
		return m
	}
	m := labelMap(ls)
	x.labelSets[string(x.key)] = m
	return m
}

// appendLabelKey appends a key that tells label sets apart: each name and value, 0xff-separated
// (0xff is not valid UTF-8, so no label holds it).
func appendLabelKey(b []byte, ls []*dto.LabelPair) []byte {
	for _, l := range ls {
		b = append(b, l.GetName()...)
		b = append(b, 0xff)
		b = append(b, l.GetValue()...)
		b = append(b, 0xff)
	}
	return b
}

// projectLabels appends to out the labels of ls named in keep, in ls's order.
func projectLabels(out, ls []*dto.LabelPair, keep []string) []*dto.LabelPair {
	for _, l := range ls {
		if slices.Contains(keep, l.GetName()) {
			out = append(out, l)
		}
	}
	return out
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

// readFamily reports whether hitrate reads the values of a vllm: family: one of its names, or
// the _created gauge of one of its counters (when the counter started, which tells a restart).
func readFamily(name string) bool {
	if _, ok := lookupName(name); ok {
		return true
	}
	base, ok := strings.CutSuffix(name, "_created")
	return ok && isCounter(base+"_total")
}

// createdKey is the series key of a counter's _created gauge: the same labels, the name with
// _created for _total. ok is false for a name that is not a counter's.
func createdKey(s Sample) (string, bool) {
	base, ok := strings.CutSuffix(s.Name, "_total")
	if !ok {
		return "", false
	}
	return seriesKey(Sample{Name: base + "_created", Labels: s.Labels}), true
}

// increase turns two dumps of the same replicas into points: counters give their increase from
// a to b, gauges their value in b. A counter that restarted counts from zero again, so its
// increase is its new value: vLLM's counters say they restarted by their _created gauge (the
// time the counter started) moving on, even when the new process has already counted past the
// old value; without _created, only a counter that went down shows it. Counter series missing
// from a have no rate, as Prometheus's rate() needs two samples: they are points with fresh
// set and no value, so their replica still has a row and is known to be new.
func increase(a, b Dump) []point {
	before := make(map[string]float64, len(a.Samples))
	for _, s := range a.Samples {
		before[seriesKey(s)] = s.Value
	}
	created := map[string]float64{}
	for _, s := range b.Samples {
		if strings.HasSuffix(s.Name, "_created") {
			created[seriesKey(s)] = s.Value
		}
	}
	out := make([]point, 0, len(b.Samples))
	for _, s := range b.Samples {
		if !isCounter(s.Name) {
			out = append(out, point{name: s.Name, labels: s.Labels, value: s.Value})
			continue
		}
		prev, ok := before[seriesKey(s)]
		if !ok {
			out = append(out, point{name: s.Name, labels: s.Labels, fresh: true})
			continue
		}
		p := point{name: s.Name, labels: s.Labels, value: s.Value - prev}
		restarted := s.Value < prev
		if ck, ok := createdKey(s); ok {
			ca, okA := before[ck]
			cb, okB := created[ck]
			restarted = restarted || (okA && okB && finite(ca) && finite(cb) && cb > ca)
		}
		if math.IsNaN(prev) || math.IsInf(prev, 0) {
			p.value = prev
		} else if restarted {
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
