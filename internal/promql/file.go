package promql

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// ErrNeedWindow is returned for two dumps without sample timestamps when no window was given:
// the rates need the time between them.
var ErrNeedWindow = errors.New("two dumps without timestamps: give the time between them with --window")

// ReadDump reads and parses one saved /metrics dump; it stops with ctx's cause when ctx ends.
// by is the --by labels the replicas will be grouped by. The series of the families hitrate
// reads are kept whole; of every other vllm: family, one sample per replica (by its grouping
// labels), model, version and router, which is all hitrate takes from it. So what a dump costs
// grows with the series hitrate reads and the replicas, not with the series in the file.
func ReadDump(ctx context.Context, path string, by []string) (Dump, error) {
	f, err := os.Open(path)
	if err != nil {
		return Dump{}, fmt.Errorf("read dump: %w", err)
	}
	defer func() { _ = f.Close() }() // opened for reading: a close error loses nothing
	return readExposition(ctxReader{ctx, f}, path, MaxDumpSeries, placeLabels(by))
}

// placeLabels are the labels that say which replica, model, vLLM version or router a series
// belongs to: what assemble reads of a family whose values hitrate does not use.
func placeLabels(by []string) []string {
	out := append([]string{"pod", "instance", "engine", "model_name", "server"}, versionLabels...)
	for _, b := range by {
		if !slices.Contains(out, b) {
			out = append(out, b)
		}
	}
	return out
}

// ctxReader ends a read with ctx's cause once ctx is done, so a parser reading a large file
// stops at the next read.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if c.ctx.Err() != nil {
		return 0, context.Cause(c.ctx)
	}
	return c.r.Read(p)
}

// dumpName names a replica after its dump file when the series carry no replica label.
func dumpName(path string) string {
	return strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
}

// FromDumps builds the Input from one dump (lifetime totals) or two dumps of the same
// replicas (rates between them). window is the time between the dumps when their samples carry
// no timestamps; 0 means unknown.
func FromDumps(ctx context.Context, paths []string, window time.Duration, by []string) (Input, error) {
	in := Input{Source: SourceFile, Inputs: paths}
	switch len(paths) {
	case 1:
		d, err := ReadDump(ctx, paths[0], by)
		if err != nil {
			return in, err
		}
		if err := dumpCarriesBy(d, by); err != nil {
			return in, err
		}
		in.Mode = ModeLifetime
		asm := assemble(slices.Values(totals(d)), grouping{by: by, fallback: dumpName(paths[0])}, 0)
		in.Observations, in.Routers, in.Stacks = asm.obs, asm.routers, d.Stacks
		return in, nil
	case 2:
		a, err := ReadDump(ctx, paths[0], by)
		if err != nil {
			return in, err
		}
		b, err := ReadDump(ctx, paths[1], by)
		if err != nil {
			return in, err
		}
		if err := dumpCarriesBy(b, by); err != nil {
			return in, err
		}
		dt := window.Seconds()
		if ta, tb := sampleTime(a), sampleTime(b); !ta.IsZero() && !tb.IsZero() {
			if !tb.After(ta) {
				return in, fmt.Errorf("%s is not later than %s (sample timestamps): give the earlier dump first", paths[1], paths[0])
			}
			dt = tb.Sub(ta).Seconds()
		}
		if dt <= 0 {
			return in, ErrNeedWindow
		}
		if sameFile(paths[0], paths[1]) {
			// Every counter would be unchanged, which reads as a fleet of idle replicas.
			return in, fmt.Errorf("%s and %s are the same file: give two dumps of the replicas saved a window apart (or one dump, for lifetime totals)", paths[0], paths[1])
		}
		if ca, cb, shared := counterOverlap(a, b); shared == 0 && ca+cb > 0 {
			// Without this check the first dump's replicas vanish and the second's show gauges
			// only, which reads like a fleet of idle replicas.
			return in, fmt.Errorf("%s and %s share no vllm: counter series (%d and %d counter series): are they dumps of the same replicas? Give the same replica's /metrics saved twice", paths[0], paths[1], ca, cb)
		}
		in.Mode, in.Window = ModeRate, dt
		g := grouping{by: by, fallback: dumpName(paths[1])}
		asm := assemble(slices.Values(increase(a, b)), g, dt)
		in.Observations, in.Routers = asm.obs, asm.routers
		for _, s := range append(slices.Clone(a.Stacks), b.Stacks...) {
			in.Stacks = addStack(in.Stacks, s.Product, s.Family)
		}
		in.Gone = gone(a, asm.obs, g) // named as the second dump names its replicas
		if len(in.Observations) == 0 {
			return in, fmt.Errorf("%s and %s share no vllm: counter series: are they dumps of the same replicas?", paths[0], paths[1])
		}
		return in, nil
	}
	return in, fmt.Errorf("give one dump (lifetime totals) or two dumps of the same replicas (rates), not %d", len(paths))
}

// counterOverlap counts the counter series of a and of b, and those the two share.
func counterOverlap(a, b Dump) (ca, cb, shared int) {
	inA := map[string]bool{}
	for _, s := range a.Samples {
		if isCounter(s.Name) {
			inA[seriesKey(s)] = true
		}
	}
	for _, s := range b.Samples {
		if isCounter(s.Name) {
			cb++
			if inA[seriesKey(s)] {
				shared++
			}
		}
	}
	return len(inA), cb, shared
}

// gone returns the replicas of the first reading a whose counter series have no row in obs
// (from the second reading): they stopped between the two. g groups a's series.
func gone(a Dump, obs []Observation, g grouping) []string {
	rows := make(map[string]bool, len(obs))
	for _, o := range obs {
		rows[o.Replica] = true
	}
	var out []string
	for _, s := range a.Samples {
		if s.Labels["server"] != "" || !isCounter(s.Name) {
			continue
		}
		if k := g.key(s.Labels); !rows[k] && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// dumpCarriesBy refuses a --by that no vllm: series of the dump carries, as the Prometheus
// source does.
func dumpCarriesBy(d Dump, by []string) error {
	if carriesBy(d.Samples, func(s Sample) map[string]string { return s.Labels }, by) {
		return nil
	}
	return fmt.Errorf("%s: --by %s: no vLLM series carries these labels; see the labels on its vllm: lines, or leave --by out (pod, else instance)", d.Source, strings.Join(by, ","))
}

// sameFile reports whether two paths name one file (a path given twice, or a link to it).
func sameFile(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}
