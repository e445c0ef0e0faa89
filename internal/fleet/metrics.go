package fleet

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"
)

// Version boundaries of vLLM's metric names (SPEC §3.3).
var (
	v080  = version{0, 8, 0}  // V1 engine metrics; the V0 hit-rate gauges are deprecated
	v083  = version{0, 8, 3}  // the engine label appears
	v092  = version{0, 9, 2}  // prefix_cache_* and kv_cache_usage_perc replace the gpu_ names
	v0110 = version{0, 11, 0} // the gpu_ names are hidden
	v0160 = version{0, 16, 0} // prompt_tokens_by_source_total
)

// family builds metric families in vLLM's exposition: labels sorted, counters with _total and a
// _created gauge beside them, as prometheus_client writes them.
type family struct {
	fams    []*dto.MetricFamily
	created float64
}

func (f *family) add(name, help string, typ dto.MetricType, labels map[string]string, v float64) {
	var fam *dto.MetricFamily
	for _, x := range f.fams {
		if x.GetName() == name {
			fam = x
		}
	}
	if fam == nil {
		fam = &dto.MetricFamily{Name: proto.String(name), Help: proto.String(help), Type: typ.Enum()}
		f.fams = append(f.fams, fam)
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	m := &dto.Metric{}
	for _, k := range keys {
		m.Label = append(m.Label, &dto.LabelPair{Name: proto.String(k), Value: proto.String(labels[k])})
	}
	switch typ {
	case dto.MetricType_COUNTER:
		m.Counter = &dto.Counter{Value: proto.Float64(v)}
	default:
		m.Gauge = &dto.Gauge{Value: proto.Float64(v)}
	}
	fam.Metric = append(fam.Metric, m)
}

// counter adds name_total and name_created.
func (f *family) counter(name, help string, labels map[string]string, v float64) {
	f.add(name+"_total", help, dto.MetricType_COUNTER, labels, v)
	f.add(name+"_created", help, dto.MetricType_GAUGE, labels, f.created)
}

func (f *family) gauge(name, help string, labels map[string]string, v float64) {
	f.add(name, help, dto.MetricType_GAUGE, labels, v)
}

// Metrics returns the replica's /metrics body in the Prometheus text format.
func (r *Replica) Metrics() ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f := &family{created: float64(r.started.UnixMilli()) / 1000}
	v := r.version
	v0 := v.less(v080)
	f.gauge("vllm:cache_config_info", "Information of the LLMEngine CacheConfig", map[string]string{
		"block_size":               strconv.Itoa(r.cfg.BlockSize),
		"cache_dtype":              "auto",
		"enable_prefix_caching":    pyBool(r.cachingOn),
		"num_gpu_blocks":           strconv.Itoa(r.cfg.KVBlocks * r.cfg.Engines),
		"prefix_caching_hash_algo": "sha256",
	}, 1)
	for i, e := range r.engines {
		l := map[string]string{"model_name": r.cfg.Model}
		if !v.less(v083) {
			l["engine"] = strconv.Itoa(i)
		}
		c := e.c
		f.gauge("vllm:num_requests_running", "Number of requests in model execution batches.", l, float64(len(e.running)))
		f.gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed.", l, float64(len(e.waiting)))
		if v0 {
			f.gauge("vllm:num_requests_swapped", "Number of requests swapped to CPU.", l, 0)
			f.gauge("vllm:gpu_cache_usage_perc", "GPU KV-cache usage. 1 means 100 percent usage.", l, e.usage())
			f.gauge("vllm:cpu_cache_usage_perc", "CPU KV-cache usage. 1 means 100 percent usage.", l, 0)
			hr := -1.0
			if c.queries > 0 {
				hr = c.hits / c.queries
			}
			f.gauge("vllm:gpu_prefix_cache_hit_rate", "GPU prefix cache block hit rate.", l, hr)
			f.gauge("vllm:cpu_prefix_cache_hit_rate", "CPU prefix cache block hit rate.", l, -1)
		} else {
			if v.less(v0110) {
				f.gauge("vllm:gpu_cache_usage_perc", "GPU KV-cache usage. 1 means 100 percent usage. DEPRECATED: Use vllm:kv_cache_usage_perc instead.", l, e.usage())
				f.counter("vllm:gpu_prefix_cache_queries", "GPU prefix cache queries, in terms of number of queried tokens. DEPRECATED: Use vllm:prefix_cache_queries instead.", l, c.queries)
				f.counter("vllm:gpu_prefix_cache_hits", "GPU prefix cache hits, in terms of number of cached tokens. DEPRECATED: Use vllm:prefix_cache_hits instead.", l, c.hits)
			}
			if !v.less(v092) {
				f.gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", l, e.usage())
				f.counter("vllm:prefix_cache_queries", "Prefix cache queries, in terms of number of queried tokens.", l, c.queries)
				f.counter("vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens.", l, c.hits)
			}
		}
		f.counter("vllm:num_preemptions", "Cumulative number of preemption from the engine.", l, c.preemptions)
		f.counter("vllm:prompt_tokens", "Number of prefill tokens processed.", l, c.promptTokens)
		f.counter("vllm:generation_tokens", "Number of generation tokens processed.", l, c.genTokens)
		if !v.less(v0160) {
			for src, n := range map[string]float64{"local_compute": c.localCompute, "local_cache_hit": c.cacheHit, "external_kv_transfer": 0} {
				ls := map[string]string{"source": src}
				for k, x := range l {
					ls[k] = x
				}
				f.counter("vllm:prompt_tokens_by_source", "Number of prompt tokens by source.", ls, n)
			}
		}
		ls := map[string]string{"finished_reason": "stop"}
		for k, x := range l {
			ls[k] = x
		}
		f.counter("vllm:request_success", "Count of successfully processed requests.", ls, c.requests)
	}
	var buf bytes.Buffer
	for _, fam := range f.fams {
		slices.SortStableFunc(fam.Metric, func(a, b *dto.Metric) int { return compareLabels(a.Label, b.Label) })
		if _, err := expfmt.MetricFamilyToText(&buf, fam); err != nil {
			return nil, fmt.Errorf("replica %s: encode %s: %w", r.cfg.Name, fam.GetName(), err)
		}
	}
	return buf.Bytes(), nil
}

func compareLabels(a, b []*dto.LabelPair) int {
	for i := range min(len(a), len(b)) {
		if c := bytes.Compare([]byte(a[i].GetValue()), []byte(b[i].GetValue())); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

func (r *Replica) serveMetrics(w http.ResponseWriter, _ *http.Request) {
	body, err := r.Metrics()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	_, _ = w.Write(body)
}
