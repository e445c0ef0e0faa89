package lint

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/kvcheck/kvcheck/internal/finding"
)

// Querier is the part of the Prometheus HTTP API the online check uses.
type Querier interface {
	Query(ctx context.Context, query string, ts time.Time, opts ...promv1.Option) (model.Value, promv1.Warnings, promv1.Infos, error)
	QueryRange(ctx context.Context, query string, r promv1.Range, opts ...promv1.Option) (model.Value, promv1.Warnings, promv1.Infos, error)
}

// Presence is what a Prometheus server holds for one metric name.
type Presence struct {
	Now bool // series exist at the evaluation time
	// LastSeen is the last time series existed within the lookback; zero when never.
	LastSeen time.Time
}

// onlineSteps is how many steps the lookback is cut into when finding when a name was last
// present; a finer step costs the server more points.
const onlineSteps = 250

// Presences asks the server, for each name, whether it has series now and when it last had
// any within the lookback: pint's promql/series check, "never present" versus "last seen".
func Presences(ctx context.Context, q Querier, names []string, lookback time.Duration, now time.Time) (map[string]Presence, error) {
	out := make(map[string]Presence, len(names))
	step := max(lookback/onlineSteps, time.Minute)
	for _, n := range names {
		sel := fmt.Sprintf("{__name__=%s}", strconv.Quote(n))
		v, _, _, err := q.Query(ctx, "count("+sel+")", now)
		if err != nil {
			return nil, fmt.Errorf("query %s on prometheus: %w", n, err)
		}
		if vec, ok := v.(model.Vector); ok && len(vec) > 0 {
			out[n] = Presence{Now: true, LastSeen: now}
			continue
		}
		// count_over_time over one step at every step covers the lookback without gaps.
		expr := fmt.Sprintf("count(count_over_time(%s[%s]))", sel, model.Duration(step))
		v, _, _, err = q.QueryRange(ctx, expr, promv1.Range{Start: now.Add(-lookback), End: now, Step: step})
		if err != nil {
			return nil, fmt.Errorf("query %s over the last %s on prometheus: %w", n, model.Duration(lookback), err)
		}
		p := Presence{}
		if m, ok := v.(model.Matrix); ok {
			for _, s := range m {
				if len(s.Values) > 0 {
					t := s.Values[len(s.Values)-1].Timestamp.Time()
					if t.After(p.LastSeen) {
						p.LastSeen = t
					}
				}
			}
		}
		out[n] = p
	}
	return out, nil
}

// CheckOnline is the online check of lint --prometheus: it asks q whether each name results
// reference has series (Presences, allowing perName of time for each name) and adds the findings
// (AddOnline) with server named in them.
func CheckOnline(ctx context.Context, q Querier, results []FileResult, server string, lookback, perName time.Duration, now time.Time) error {
	names := Names(results)
	qctx, cancel := context.WithTimeout(ctx, perName*time.Duration(max(len(names), 1)))
	defer cancel()
	pres, err := Presences(qctx, q, names, lookback, now)
	if err != nil {
		return err
	}
	AddOnline(results, pres, server, lookback, now)
	return nil
}

// AddOnline adds a finding for each referenced name that has no series now: "absent" when
// it had none within the lookback, "stale" when it stopped. Names that already have a
// finding in the same file are left alone.
func AddOnline(results []FileResult, pres map[string]Presence, server string, lookback time.Duration, now time.Time) {
	for i := range results {
		r := &results[i]
		flagged := map[string]bool{}
		for _, f := range r.Findings {
			flagged[f.Metric] = true
		}
		for _, ref := range r.Refs {
			p, ok := pres[ref.Name]
			if !ok || p.Now || flagged[ref.Name] {
				continue
			}
			f := Finding{Finding: finding.Finding{File: r.Path, Line: ref.Line, Column: ref.Column, Pointer: ref.Pointer}, Location: ref.Location, Metric: ref.Name}
			if p.LastSeen.IsZero() {
				f.Severity, f.Code = finding.Warning, CodeAbsent
				f.Message = fmt.Sprintf("%s has never been present on %s in the last %s: this query returns nothing", ref.Name, server, model.Duration(lookback))
				f.Status = StatusAbsent
			} else {
				f.Severity, f.Code = finding.Warning, CodeStale
				f.Message = fmt.Sprintf("%s is not present on %s now; last seen %s ago", ref.Name, server, ago(now.Sub(p.LastSeen)))
				f.Status = StatusStale
			}
			r.Findings = append(r.Findings, f)
		}
		slices.SortStableFunc(r.Findings, func(a, b Finding) int {
			if a.Line != b.Line {
				return a.Line - b.Line
			}
			return a.Column - b.Column
		})
	}
}

// ago rounds a duration the way a person says it: 3d, 5h, 12m.
func ago(d time.Duration) string {
	switch {
	case d >= 24*time.Hour:
		return fmt.Sprintf("%dd", int(d.Hours()/24+0.5))
	case d >= time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()+0.5))
	}
	return fmt.Sprintf("%dm", int(d.Minutes()+0.5))
}

// Names returns the distinct names the results' queries select, sorted.
func Names(results []FileResult) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range results {
		for _, ref := range r.Refs {
			if !seen[ref.Name] {
				seen[ref.Name] = true
				out = append(out, ref.Name)
			}
		}
	}
	slices.Sort(out)
	return out
}
