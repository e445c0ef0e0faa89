// Package benchdata generates the large inputs BENCHMARKS.md measures lint and assess on (a
// directory of 200 MB of dashboards, one dashboard of 20,000 panels, a request log of 449 MB)
// from the corpus's real dashboards and traces, and decodes a tree of JSON files as the
// reference the lint figures are set against. The generated data is never committed: the
// generator is, and the same seed gives the same bytes.
package benchdata

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Corpus holds the real dashboards the generated ones are made from.
type Corpus struct {
	docs   []map[string]any // each corpus dashboard, decoded
	panels []panelOf        // every top-level panel of every dashboard
	// panelBytes is the mean size of a panel pretty-printed and docBytes of a dashboard
	// without its panels, for sizing dashboards.
	panelBytes, docBytes int
}

type panelOf struct {
	doc   int
	panel map[string]any
}

// LoadCorpus reads the Grafana dashboards of the corpus's dashboards directory.
func LoadCorpus(corpus string) (*Corpus, error) {
	dir := filepath.Join(corpus, "dashboards")
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	c := &Corpus{}
	total := 0
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			return nil, fmt.Errorf("corpus: %w", err)
		}
		var doc map[string]any
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		if err := dec.Decode(&doc); err != nil {
			return nil, fmt.Errorf("corpus %s: %w", n, err)
		}
		ps, _ := doc["panels"].([]any)
		for _, p := range ps {
			pm, ok := p.(map[string]any)
			if !ok {
				continue
			}
			c.panels = append(c.panels, panelOf{doc: len(c.docs), panel: pm})
			pb, _ := json.MarshalIndent(pm, "    ", "  ") // as deep as it is written
			total += len(pb)
		}
		c.docs = append(c.docs, doc)
	}
	if len(c.panels) == 0 {
		return nil, fmt.Errorf("corpus %s: no Grafana dashboard with panels (is KVCHECK_CORPUS the shared corpus?)", dir)
	}
	c.panelBytes = total / len(c.panels)
	for _, d := range c.docs {
		bare := maps.Clone(d)
		delete(bare, "panels")
		b, _ := json.MarshalIndent(bare, "", "  ")
		c.docBytes += len(b)
	}
	c.docBytes /= len(c.docs)
	return c, nil
}

// DashboardStats says what Dashboards wrote.
type DashboardStats struct {
	Files, Panels, Queries, Minified int
	Bytes                            int64
}

// Dashboards writes n dashboards of about total bytes in all under dir, in 100 team
// directories. Each takes the settings of one corpus dashboard and a varying number of panels
// drawn from all of them (1 to twice the mean), as teams assemble dashboards from the
// published ones; most teams add their own namespace matcher to every selector, and some
// change quantiles and rate windows, so queries repeat across panels and files as they do in
// a real repository, but not all of them. About one in seven is minified.
func (c *Corpus) Dashboards(dir string, n int, total int64, seed uint64) (DashboardStats, error) {
	rng := rand.New(rand.NewPCG(seed, 0x6b76636865636b))
	mean := max(1, float64(total/int64(max(n, 1))-int64(c.docBytes))/float64(max(c.panelBytes, 1)))
	var st DashboardStats
	for i := range n {
		team := rng.IntN(100)
		d := c.dashboard(rng, i, team, 1+int(rng.Float64()*(2*mean-1)))
		minify := rng.IntN(7) == 0
		b, err := encode(d, minify)
		if err != nil {
			return st, err
		}
		title, _ := d["title"].(string)
		p := filepath.Join(dir, fmt.Sprintf("team-%02d", team), fmt.Sprintf("%s-%05d.json", slug(title), i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return st, err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return st, err
		}
		st.Files++
		st.Bytes += int64(len(b))
		st.Panels += countPanels(d["panels"])
		st.Queries += bytes.Count(b, []byte(`"expr"`))
		if minify {
			st.Minified++
		}
	}
	return st, nil
}

// BigDashboard writes one minified dashboard of n panels, cycling through the corpus's panels
// with a namespace of its own in each (so that few queries repeat).
func (c *Corpus) BigDashboard(w io.Writer, n int, seed uint64) (DashboardStats, error) {
	rng := rand.New(rand.NewPCG(seed, 0x6269676461736862))
	d := c.dashboard(rng, 0, rng.IntN(100), 0)
	panels := make([]any, 0, n)
	for i := range n {
		p := deepCopy(c.panels[i%len(c.panels)].panel).(map[string]any)
		mutatePanel(p, rng, fmt.Sprintf("ns-%d", i))
		p["id"] = json.Number(fmt.Sprint(i + 1))
		p["gridPos"] = map[string]any{"h": json.Number("8"), "w": json.Number("12"), "x": json.Number(fmt.Sprint(12 * (i % 2))), "y": json.Number(fmt.Sprint(8 * (i / 2)))}
		panels = append(panels, p)
	}
	d["panels"] = panels
	b, err := encode(d, true)
	if err != nil {
		return DashboardStats{}, err
	}
	if _, err := w.Write(b); err != nil {
		return DashboardStats{}, err
	}
	return DashboardStats{Files: 1, Panels: n, Queries: bytes.Count(b, []byte(`"expr"`)), Minified: 1, Bytes: int64(len(b))}, nil
}

// dashboard builds dashboard i of a team from k panels (none when k is 0).
func (c *Corpus) dashboard(rng *rand.Rand, i, team, k int) map[string]any {
	src := c.docs[rng.IntN(len(c.docs))]
	d := deepCopy(src).(map[string]any)
	title, _ := d["title"].(string)
	if title == "" {
		title = "vLLM"
	}
	d["title"] = fmt.Sprintf("%s / %s %d", teams[team%len(teams)], title, i)
	d["uid"] = fmt.Sprintf("%08x", rng.Uint32())
	d["id"] = nil
	d["version"] = json.Number(fmt.Sprint(1 + rng.IntN(40)))
	// Most teams scope every query to their namespace; the others use the queries as
	// published. Within a team the scope is the same, so its dashboards share queries.
	scope := ""
	if team%5 != 0 {
		scope = fmt.Sprintf("team-%02d", team)
	}
	var tweak *rand.Rand // a third of the teams edit quantiles and windows, each its own way
	if team%3 == 0 {
		tweak = rand.New(rand.NewPCG(uint64(team), 0x7477656b))
	}
	var panels []any
	y := 0
	for j := range k {
		p := deepCopy(c.panels[rng.IntN(len(c.panels))].panel).(map[string]any)
		mutatePanel(p, tweak, scope)
		p["id"] = json.Number(fmt.Sprint(j + 1))
		if gp, ok := p["gridPos"].(map[string]any); ok {
			gp["y"] = json.Number(fmt.Sprint(y))
		}
		y += 8
		panels = append(panels, p)
	}
	if k >= 6 && rng.IntN(5) == 0 {
		// A collapsed row holding the last third, as Grafana saves it.
		cut := k - k/3
		row := map[string]any{"type": "row", "title": "Details", "collapsed": true, "id": json.Number(fmt.Sprint(k + 1)),
			"gridPos": map[string]any{"h": json.Number("1"), "w": json.Number("24"), "x": json.Number("0"), "y": json.Number(fmt.Sprint(8 * cut))},
			"panels":  slices.Clone(panels[cut:])}
		panels = append(panels[:cut:cut], row)
	}
	if k > 0 {
		d["panels"] = panels
	}
	if tl, ok := d["templating"].(map[string]any); ok && scope != "" {
		if list, ok := tl["list"].([]any); ok {
			for _, v := range list {
				if vm, ok := v.(map[string]any); ok {
					if q, ok := vm["query"].(string); ok {
						vm["query"] = scopeExpr(q, scope)
					}
				}
			}
		}
	}
	return d
}

var teams = []string{"search", "ads", "assist", "infra", "payments", "support", "docs", "growth", "ml-platform", "risk", "mobile"}

// mutatePanel scopes every query of a panel (and of the panels a row holds) and, with tweak,
// changes its quantiles and windows.
func mutatePanel(p map[string]any, tweak *rand.Rand, scope string) {
	if ts, ok := p["targets"].([]any); ok {
		for _, t := range ts {
			tm, ok := t.(map[string]any)
			if !ok {
				continue
			}
			e, ok := tm["expr"].(string)
			if !ok {
				continue
			}
			if tweak != nil {
				e = tweakExpr(e, tweak)
			}
			if scope != "" {
				e = scopeExpr(e, scope)
			}
			tm["expr"] = e
		}
	}
	if ps, ok := p["panels"].([]any); ok {
		for _, c := range ps {
			if cm, ok := c.(map[string]any); ok {
				mutatePanel(cm, tweak, scope)
			}
		}
	}
}

var (
	quantileRE = regexp.MustCompile(`histogram_quantile\(\s*0\.\d+`)
	windowRE   = regexp.MustCompile(`\[(\d+[smhd]|\$__rate_interval|\$__interval)\]`)
	quantiles  = []string{"0.5", "0.9", "0.95", "0.99", "0.999"}
	windows    = []string{"1m", "2m", "5m", "10m", "$__rate_interval"}
)

// tweakExpr changes a query's quantile and its rate windows, as a team edits a copied panel.
func tweakExpr(e string, rng *rand.Rand) string {
	e = quantileRE.ReplaceAllStringFunc(e, func(string) string {
		return "histogram_quantile(" + quantiles[rng.IntN(len(quantiles))]
	})
	w := windows[rng.IntN(len(windows))]
	return windowRE.ReplaceAllLiteralString(e, "["+w+"]")
}

// scopeExpr adds namespace="scope" to every selector of a vllm: name, as a team that runs its
// own replicas does: name{a="b"} becomes name{namespace="scope",a="b"}, a bare name
// name{namespace="scope"}. Names inside strings (a __name__ regex) are left alone.
func scopeExpr(e, scope string) string {
	var b strings.Builder
	for {
		i := strings.Index(e, "vllm:")
		if i < 0 {
			b.WriteString(e)
			return b.String()
		}
		j := i + len("vllm:")
		for j < len(e) && (isNameByte(e[j]) || e[j] == ':') {
			j++
		}
		b.WriteString(e[:j])
		inString := strings.Count(e[:i], `"`)%2 == 1 || (i > 0 && isNameByte(e[i-1]))
		switch {
		case inString:
		case j < len(e) && e[j] == '{':
			b.WriteString(`{namespace="` + scope + `",`) // name{} stays valid: {namespace="x",}
			j++
		default:
			b.WriteString(`{namespace="` + scope + `"}`)
		}
		e = e[j:]
	}
}

func isNameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func countPanels(v any) int {
	ps, _ := v.([]any)
	n := 0
	for _, p := range ps {
		n++
		if pm, ok := p.(map[string]any); ok {
			n += countPanels(pm["panels"])
		}
	}
	return n
}

func encode(d map[string]any, minify bool) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if !minify {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(d); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[k] = deepCopy(x)
		}
		return m
	case []any:
		s := make([]any, len(t))
		for i, x := range t {
			s[i] = deepCopy(x)
		}
		return s
	}
	return v
}

func slug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
		if b.Len() >= 40 {
			break
		}
	}
	return strings.Trim(b.String(), "-")
}

// RequestStats says what RequestLog wrote.
type RequestStats struct {
	Requests, Passes int
	Bytes            int64
}

// RequestLog writes a request log of about size bytes from the corpus's Mooncake conversation
// trace: each row becomes an OpenAI chat request whose text reproduces the row's blocks (each
// of the trace's 512-token block ids is the same 2,048 bytes of words wherever it appears, 4
// bytes a token as kvcheck estimates, so two requests share as long a prefix as the trace
// says), the first block the system prompt and the rest the user's turn, with the row's
// arrival time and output length. Past the trace's end it starts again after its last
// arrival, with new block ids.
func RequestLog(corpus string, w io.Writer, size int64) (RequestStats, error) {
	rows, err := mooncake(filepath.Join(corpus, "traces", "mooncake_conversation_trace.jsonl"))
	if err != nil {
		return RequestStats{}, err
	}
	span := rows[len(rows)-1].Timestamp + 1000
	bw := bufio.NewWriterSize(w, 1<<20)
	cw := &countWriter{w: bw}
	var st RequestStats
	var text []byte
	for pass := 0; cw.n < size; pass++ {
		st.Passes = pass + 1
		for _, r := range rows {
			if cw.n >= size {
				break
			}
			system, user := "", []byte(nil)
			left := r.InputLength
			for k, h := range r.HashIDs {
				n := min(left, 512)
				if n <= 0 {
					break
				}
				left -= n
				text = blockText(text[:0], uint64(h)+uint64(pass)<<40, 4*n)
				if k == 0 {
					system = string(text)
				} else {
					user = append(user, text...)
				}
			}
			line := requestLine{
				Timestamp: 1764496800 + float64(int64(pass)*span+r.Timestamp)/1000,
				Model:     "Qwen/Qwen3-32B", MaxTokens: r.OutputLength,
				Messages: []message{{Role: "system", Content: system}, {Role: "user", Content: string(user)}},
			}
			b, err := json.Marshal(line)
			if err != nil {
				return st, err
			}
			b = append(b, '\n')
			if _, err := cw.Write(b); err != nil {
				return st, err
			}
			st.Requests++
		}
	}
	if err := bw.Flush(); err != nil {
		return st, err
	}
	st.Bytes = cw.n
	return st, nil
}

type requestLine struct {
	Timestamp float64   `json:"timestamp"`
	Model     string    `json:"model"`
	Messages  []message `json:"messages"`
	MaxTokens int       `json:"max_tokens"`
}

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type mooncakeRow struct {
	Timestamp    int64 `json:"timestamp"`
	InputLength  int   `json:"input_length"`
	OutputLength int   `json:"output_length"`
	HashIDs      []int `json:"hash_ids"`
}

func mooncake(path string) ([]mooncakeRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("corpus: %w", err)
	}
	defer func() { _ = f.Close() }() // read only
	var rows []mooncakeRow
	dec := json.NewDecoder(bufio.NewReader(f))
	for {
		var r mooncakeRow
		if err := dec.Decode(&r); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("corpus %s: %w", path, err)
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("corpus %s: no rows", path)
	}
	return rows, nil
}

var vocabulary = strings.Fields(`the a of to and in is for on that with as by this be are from or it at
an was which can not have we you model request token cache prefix block replica router latency queue
throughput batch prompt system user assistant answer question context window memory GPU kernel
attention layer weight tensor shard node pod service deploy config value metric rate count sum
error retry timeout session tenant account order ticket status report policy document page table
row column index search result score rank query filter summary detail note review draft plan step
task goal because however therefore while when where after before during until unless since`)

// blockText appends n bytes of words chosen by key: the same key gives the same text.
func blockText(dst []byte, key uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(key, 0x626c6f636b))
	start := len(dst)
	for len(dst)-start < n {
		w := vocabulary[rng.IntN(len(vocabulary))]
		dst = append(dst, w...)
		if rng.IntN(12) == 0 {
			dst = append(dst, '.')
		}
		dst = append(dst, ' ')
	}
	return dst[:start+n]
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// DecodeStats says what Decode read.
type DecodeStats struct {
	Files int
	Bytes int64
}

// Decode reads every file under the paths and decodes it with encoding/json into an empty
// interface, one after another: the least any tool that understands dashboards must do, and
// the reference of the lint figures.
func Decode(paths []string) (DecodeStats, error) { return DecodeJobs(paths, 1) }

// DecodeJobs is Decode on jobs goroutines, each reading and decoding the next file the walk
// found: the reference's own speedup on several cores, for lint --jobs's.
func DecodeJobs(paths []string, jobs int) (DecodeStats, error) {
	var (
		st    DecodeStats
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	found := make(chan string, 64)
	for range max(jobs, 1) {
		wg.Go(func() {
			for p := range found {
				b, err := os.ReadFile(p)
				if err == nil {
					var v any
					if err = json.Unmarshal(b, &v); err != nil {
						err = fmt.Errorf("%s: %w", p, err)
					}
				}
				mu.Lock()
				if err != nil && first == nil {
					first = err
				}
				st.Files++
				st.Bytes += int64(len(b))
				mu.Unlock()
			}
		})
	}
	var err error
	for _, root := range paths {
		if err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				found <- p
			}
			return err
		}); err != nil {
			break
		}
	}
	close(found)
	wg.Wait()
	if err == nil {
		err = first
	}
	return st, err
}
