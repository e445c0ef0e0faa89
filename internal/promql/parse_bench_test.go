package promql

import (
	"bytes"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kvcheck/kvcheck/internal/fleet"
)

// BenchmarkParseExposition reads one emulated replica's /metrics (8 data-parallel engines). The
// reference is expfmt's text parser alone, in the same run: the difference is hitrate's own
// cost (filtering vllm: series and copying labels).
func BenchmarkParseExposition(b *testing.B) {
	f, err := fleet.New(fleet.Options{Replicas: []fleet.Config{{Engines: 8, WarmupSteps: 100}}})
	if err != nil {
		b.Fatal(err)
	}
	body, err := f.Replicas()[0].Metrics()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("hitrate", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := ParseExposition(bytes.NewReader(body), "bench"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("expfmt", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			p := expfmt.NewTextParser(model.UTF8Validation)
			if _, err := p.TextToMetricFamilies(bytes.NewReader(body)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
