package fleet

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Config describes one emulated replica. Zero fields take the defaults noted.
type Config struct {
	// Name identifies the replica in output; default "replica-<i>".
	Name string
	// Model is the served model name; default "meta-llama/Llama-3.1-8B-Instruct".
	Model string
	// Version is the emulated vLLM version, which picks the metric names (SPEC §3.3); default
	// CurrentVersion. Versions before 0.8.0 emulate the V0 engine.
	Version string
	// BlockSize is the KV block size in tokens; default 16.
	BlockSize int
	// KVBlocks is the number of KV blocks per engine; default 1024.
	KVBlocks int
	// Engines is the number of data-parallel engines (the `engine` label); default 1.
	Engines int
	// MaxRunning caps the running batch per engine; default 16.
	MaxRunning int
	// PrefixCaching switches the prefix cache off when set to false; default on.
	PrefixCaching *bool
	// Workload drives the counters; the zero value means DefaultWorkload.
	Workload Workload
	// Traffic, when set, replaces Workload: the replica serves these requests in order, one
	// at a time (the next arrives when the last has finished), and starts over at the end with
	// every block renamed, so each round starts as the first did, with none of its blocks
	// cached. With several engines, engine i serves requests i, i+Engines, ...
	Traffic []Request
	// WarmupSteps are run before the replica serves, so counters start non-zero.
	WarmupSteps int
	// Seed makes the workload deterministic; replicas with equal seeds behave identically.
	Seed uint64
	// DateLine makes the chat template behind POST /tokenize print "Today Date: <date>" in the
	// system header, as Llama 3.1's does: a change in block zero from one day to the next.
	DateLine bool
	// Now is the chat template's clock for DateLine (default time.Now).
	Now func() time.Time
}

// maxModelLen is the context length every replica reports, in /v1/models and /tokenize.
const maxModelLen = 32768

// CurrentVersion is the vLLM version emulated by default.
const CurrentVersion = "0.25.1"

func (c *Config) fill(i int) {
	if c.Name == "" {
		c.Name = fmt.Sprintf("replica-%d", i)
	}
	if c.Model == "" {
		c.Model = "meta-llama/Llama-3.1-8B-Instruct"
	}
	if c.Version == "" {
		c.Version = CurrentVersion
	}
	if c.BlockSize <= 0 {
		c.BlockSize = 16
	}
	if c.KVBlocks <= 0 {
		c.KVBlocks = 1024
	}
	if c.Engines <= 0 {
		c.Engines = 1
	}
	if c.MaxRunning <= 0 {
		c.MaxRunning = 16
	}
	if c.Workload == (Workload{}) {
		c.Workload = DefaultWorkload
	}
}

// Replica is one emulated vLLM server: an HTTP server on loopback serving GET /metrics,
// GET /version, GET /v1/models and POST /tokenize from a mux that callers may extend with Handle
// before the fleet starts.
type Replica struct {
	cfg     Config
	version version
	mux     *http.ServeMux
	started time.Time

	mu        sync.Mutex
	engines   []*engine
	cachingOn bool

	ln  net.Listener
	srv *http.Server
	url string
}

func newReplica(c Config) (*Replica, error) {
	v, err := parseVersion(c.Version)
	if err != nil {
		return nil, fmt.Errorf("replica %s: %w", c.Name, err)
	}
	r := &Replica{cfg: c, version: v, mux: http.NewServeMux(), started: time.Now(), cachingOn: c.PrefixCaching == nil || *c.PrefixCaching}
	wl := c.Workload
	if !r.cachingOn {
		wl.SharedFraction = 0
	}
	for i, t := range c.Traffic {
		if t.Prompt < 1 || t.Output < 0 {
			return nil, fmt.Errorf("replica %s: traffic request %d: prompt %d tokens, output %d: want a prompt of 1 token or more and no negative output", c.Name, i, t.Prompt, t.Output)
		}
		// Its prompt blocks, the partial one and its output's must fit, or it would wait for
		// room forever.
		if need := (t.Prompt+max(t.Output, 1))/c.BlockSize + 2; need > c.KVBlocks {
			return nil, fmt.Errorf("replica %s: traffic request %d needs %d blocks of %d tokens (%d prompt tokens, %d output), more than the %d blocks of KV cache", c.Name, i, need, c.BlockSize, t.Prompt, t.Output, c.KVBlocks)
		}
	}
	for i := range c.Engines {
		e := newEngine(c.Seed*1000+uint64(i), wl, c.BlockSize, c.KVBlocks, c.MaxRunning, v.less(version{0, 11, 0}))
		if c.Traffic != nil {
			e.traffic = []Request{} // an engine with no share of the traffic stays idle
		}
		for k := i; k < len(c.Traffic); k += c.Engines {
			e.traffic = append(e.traffic, c.Traffic[k])
		}
		e.noPrefixes = !r.cachingOn
		r.engines = append(r.engines, e)
	}
	r.Step(c.WarmupSteps)
	r.mux.HandleFunc("GET /metrics", r.serveMetrics)
	r.mux.HandleFunc("GET /version", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]string{"version": c.Version})
	})
	r.mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{"object": "list", "data": []map[string]any{{
			"id": c.Model, "object": "model", "owned_by": "vllm", "root": c.Model, "parent": nil, "max_model_len": maxModelLen,
		}}})
	})
	// The tokenizer and chat template of the served model, so kvcheck audit --tokenize gets
	// exact ids from the replica; its block size comes from vllm:cache_config_info above.
	r.mux.Handle("/tokenize", TokenizeHandler(TokenizeOptions{Model: c.Model, MaxModelLen: maxModelLen, DateLine: c.DateLine, Now: c.Now}))
	return r, nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// Name returns the replica's name.
func (r *Replica) Name() string { return r.cfg.Name }

// Config returns the replica's configuration with defaults filled in.
func (r *Replica) Config() Config { return r.cfg }

// URL returns the replica's base URL, such as http://127.0.0.1:41234, once the fleet has started.
func (r *Replica) URL() string { return r.url }

// Addr returns the replica's host:port once the fleet has started (Prometheus's instance label).
func (r *Replica) Addr() string { return strings.TrimPrefix(r.url, "http://") }

// Handle registers an extra endpoint on the replica's mux. Call it before the fleet starts, and
// not for the patterns the replica serves already (the mux rejects a second registration).
func (r *Replica) Handle(pattern string, h http.Handler) { r.mux.Handle(pattern, h) }

// Step runs n scheduler steps on every engine of the replica. Tests drive the counters with it
// to get exact, repeatable deltas.
func (r *Replica) Step(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for range n {
		for _, e := range r.engines {
			e.step()
		}
	}
}

// Totals are a replica's counters summed over its engines.
type Totals struct {
	Queries, Hits, Preemptions, Requests float64
}

// Totals returns the replica's current counters summed over engines.
func (r *Replica) Totals() Totals {
	r.mu.Lock()
	defer r.mu.Unlock()
	var t Totals
	for _, e := range r.engines {
		t.Queries += e.c.queries
		t.Hits += e.c.hits
		t.Preemptions += e.c.preemptions
		t.Requests += e.c.requests
	}
	return t
}

func (r *Replica) start() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("replica %s: listen: %w", r.cfg.Name, err)
	}
	r.ln = ln
	r.url = "http://" + ln.Addr().String()
	r.srv = &http.Server{Handler: r.mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return nil
}

func (r *Replica) close() error {
	if r.srv == nil {
		return nil
	}
	if err := r.srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("replica %s: %w", r.cfg.Name, err)
	}
	return nil
}

// version is a vLLM release number.
type version [3]int

func parseVersion(s string) (version, error) {
	var v version
	core, _, _ := strings.Cut(strings.TrimPrefix(s, "v"), "+")
	core, _, _ = strings.Cut(core, "rc")
	parts := strings.Split(core, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return v, fmt.Errorf("vLLM version %q: want major.minor[.patch]", s)
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return v, fmt.Errorf("vLLM version %q: want major.minor[.patch]", s)
		}
		v[i] = n
	}
	return v, nil
}

func (v version) less(o version) bool {
	for i := range v {
		if v[i] != o[i] {
			return v[i] < o[i]
		}
	}
	return false
}
