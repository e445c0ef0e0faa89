package promql

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/config"

	"github.com/kvcheck/kvcheck/internal/secret"
)

// SpecError is a source spec that cannot work as given: a flag value or a combination of
// flags. Commands report it as a usage error.
type SpecError struct{ msg string }

func (e *SpecError) Error() string { return e.msg }

func specErrorf(format string, args ...any) error {
	return &SpecError{fmt.Sprintf(format, args...)}
}

// Conn are the connection settings of a Prometheus-compatible HTTP API (Prometheus, Thanos,
// Mimir, Cortex, VictoriaMetrics), also used for /metrics scrapes, which often sit behind the
// same proxy. Secrets are read from files, never taken on the command line.
type Conn struct {
	URL                   string
	HTTPConfigFile        string
	BearerTokenFile       string
	BasicAuthUser         string
	BasicAuthPasswordFile string
	CAFile                string
	CertFile              string
	KeyFile               string
	ServerName            string
	InsecureSkipVerify    bool
	Headers               []string
	QueryTimeout          time.Duration
	// MaxResponseMiB bounds one HTTP answer (0: DefaultMaxResponse).
	MaxResponseMiB int
	// Verbose shows the start of an error answer's body in errors.
	Verbose bool
}

// Shown is URL as it may be shown: its credentials masked (secret.Mask).
func (c Conn) Shown() string { return secret.Mask(c.URL) }

// maxHTTPConfigFile bounds --http-config-file's read: Prometheus's http_config block, a few
// hundred bytes of keys and file names (the secrets themselves are in files it names).
const maxHTTPConfigFile = 1 << 20

// loadHTTPConfigFile reads --http-config-file as config.LoadHTTPConfigFile does (its relative
// file names are relative to its directory), but reads at most maxHTTPConfigFile bytes: a
// named pipe or a device given by mistake is an error, not a read without end.
func loadHTTPConfigFile(name string) (*config.HTTPClientConfig, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, specErrorf("--http-config-file %s: %v", name, err)
	}
	defer func() { _ = f.Close() }() // read only
	src, err := io.ReadAll(io.LimitReader(f, maxHTTPConfigFile+1))
	if err != nil {
		return nil, specErrorf("--http-config-file %s: %v", name, err)
	}
	if len(src) > maxHTTPConfigFile {
		return nil, specErrorf("--http-config-file %s: larger than %d KiB: it holds Prometheus's http_config keys (authorization, basic_auth, tls_config, ...), a few hundred bytes", name, maxHTTPConfigFile>>10)
	}
	cfg, err := config.LoadHTTPConfig(string(src))
	if err != nil {
		return nil, specErrorf("--http-config-file %s: %v", name, err)
	}
	cfg.SetDirectory(filepath.Dir(name))
	return cfg, nil
}

// httpConfig builds the client configuration from the config file and the flags; flags win.
func (c Conn) httpConfig() (config.HTTPClientConfig, error) {
	cfg := config.DefaultHTTPClientConfig
	if c.HTTPConfigFile != "" {
		f, err := loadHTTPConfigFile(c.HTTPConfigFile)
		if err != nil {
			return cfg, err
		}
		cfg = *f
	}
	if c.BearerTokenFile != "" {
		cfg.Authorization = &config.Authorization{Type: "Bearer", CredentialsFile: c.BearerTokenFile}
	}
	if c.BasicAuthUser != "" || c.BasicAuthPasswordFile != "" {
		if c.BasicAuthUser == "" || c.BasicAuthPasswordFile == "" {
			return cfg, specErrorf("basic auth needs both --basic-auth-user and --basic-auth-password-file")
		}
		cfg.BasicAuth = &config.BasicAuth{Username: c.BasicAuthUser, PasswordFile: c.BasicAuthPasswordFile}
	}
	if c.CAFile != "" {
		cfg.TLSConfig.CAFile = c.CAFile
	}
	if c.CertFile != "" || c.KeyFile != "" {
		if c.CertFile == "" || c.KeyFile == "" {
			return cfg, specErrorf("mutual TLS needs both --cert-file and --key-file")
		}
		cfg.TLSConfig.CertFile, cfg.TLSConfig.KeyFile = c.CertFile, c.KeyFile
	}
	if c.ServerName != "" {
		cfg.TLSConfig.ServerName = c.ServerName
	}
	if c.InsecureSkipVerify {
		cfg.TLSConfig.InsecureSkipVerify = true
	}
	if len(c.Headers) > 0 {
		if cfg.HTTPHeaders == nil {
			cfg.HTTPHeaders = &config.Headers{Headers: map[string]config.Header{}}
		}
		for _, h := range c.Headers {
			name, value, ok := strings.Cut(h, ":")
			name = strings.TrimSpace(name)
			if !ok || name == "" {
				return cfg, specErrorf("--header %q: write it as \"Name: value\"", h)
			}
			cur := cfg.HTTPHeaders.Headers[http.CanonicalHeaderKey(name)]
			cur.Values = append(cur.Values, strings.TrimSpace(value))
			cfg.HTTPHeaders.Headers[http.CanonicalHeaderKey(name)] = cur
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, specErrorf("prometheus connection settings: %v", err)
	}
	return cfg, nil
}

// HTTPClient returns an HTTP client with the configured auth and TLS, whose answers are
// capped at MaxResponseMiB.
func (c Conn) HTTPClient() (*http.Client, error) {
	cfg, err := c.httpConfig()
	if err != nil {
		return nil, err
	}
	if c.MaxResponseMiB < 0 {
		return nil, specErrorf("--max-response-mib %d: give a positive number of MiB", c.MaxResponseMiB)
	}
	// The extra headers (--header, the config file's http_headers) are set here, not by the
	// client library, which sends every header but Authorization and a few others on to any
	// host a redirect names: an X-Api-Key would reach it.
	headers := cfg.HTTPHeaders
	cfg.HTTPHeaders = nil
	hc, err := config.NewClientFromConfig(cfg, "kvcheck")
	if err != nil {
		return nil, fmt.Errorf("prometheus connection settings: %w", err)
	}
	if headers != nil && len(headers.Headers) > 0 {
		hc.Transport = originHeaders{next: hc.Transport, headers: headers.Headers}
	}
	hc.Transport = CapResponses(hc.Transport, int64(c.MaxResponseMiB)<<20) // 0: the default
	return hc, nil
}

// originHeaders adds the configured headers to the requests that stay on the host first asked
// (or one of its subdomains, at any port), and to none once a redirect has left it, as Go's
// client does for Authorization and cookies (net/http client.go, shouldCopyHeaderOnRedirect):
// a custom header is as likely to be a credential (X-Api-Key, X-Scope-OrgID's tenant) as
// Authorization is.
type originHeaders struct {
	next    http.RoundTripper
	headers map[string]config.Header
}

func (o originHeaders) RoundTrip(req *http.Request) (*http.Response, error) {
	if leftOrigin(req) {
		return o.next.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	for name, h := range o.headers {
		for _, v := range h.Values {
			req.Header.Add(name, v)
		}
		for _, v := range h.Secrets {
			req.Header.Add(name, string(v))
		}
		for _, f := range h.Files {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("header %s: %w", name, err)
			}
			req.Header.Add(name, strings.TrimSpace(string(b)))
		}
	}
	return o.next.RoundTrip(req)
}

// CloseIdleConnections passes on to the client library's transport, so that the client's
// own CloseIdleConnections still reaches it.
func (o originHeaders) CloseIdleConnections() {
	if c, ok := o.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// leftOrigin reports whether a request is a redirect whose chain has, at any hop, left the
// host of the first request for one that is neither it nor its subdomain. Go's client links
// each redirected request to the response that caused it (Request.Response).
func leftOrigin(req *http.Request) bool {
	first := req
	for first.Response != nil && first.Response.Request != nil {
		first = first.Response.Request
	}
	origin := strings.ToLower(first.URL.Hostname())
	for r := req; r != first; r = r.Response.Request {
		if !sameOrSubdomain(strings.ToLower(r.URL.Hostname()), origin) {
			return true
		}
	}
	return false
}

// sameOrSubdomain reports whether host is origin or a name under it (an IP address is only
// ever itself).
func sameOrSubdomain(host, origin string) bool {
	if host == origin {
		return true
	}
	if origin == "" || strings.ContainsAny(host, ":%") || net.ParseIP(origin) != nil {
		return false
	}
	return strings.HasSuffix(host, "."+origin)
}

// Querier returns the instant-query client hitrate and assess collect with: it decodes an
// answer as it reads it (streamQuerier), where API's client holds it whole first.
func (c Conn) Querier() (Querier, error) {
	if _, err := c.API(); err != nil { // the URL and the client's settings, checked once
		return nil, err
	}
	hc, err := c.HTTPClient()
	if err != nil {
		return nil, err
	}
	return newStreamQuerier(c.URL, hc)
}

// API returns the Prometheus v1 API client for URL.
func (c Conn) API() (promv1.API, error) {
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, specErrorf("--prometheus %q: give the base URL, such as http://prometheus:9090", c.Shown())
	}
	hc, err := c.HTTPClient()
	if err != nil {
		return nil, err
	}
	ac, err := api.NewClient(api.Config{Address: c.URL, Client: hc})
	if err != nil {
		return nil, fmt.Errorf("--prometheus %s: %w", c.Shown(), err)
	}
	return promv1.NewAPI(ac), nil
}

// Spec is one metrics source as a command line gives it: exactly one of a Prometheus API
// (Conn.URL), scrape targets (Scrape, TargetsFile), saved dumps (Files) or engine logs (Logs),
// with the options that shape it. hitrate and assess open it with Open.
type Spec struct {
	Conn        Conn
	Scrape      []string
	TargetsFile string
	Files       []string
	Logs        []string
	// Window is the rate window; WindowSet says it was given, since each source has its own
	// default (5m for Prometheus, 30s for scrapes, the dumps' own timestamps).
	Window    time.Duration
	WindowSet bool
	Selector  string
	By        []string
	// Time is the evaluation time for Prometheus: RFC 3339 or Unix seconds, empty for now.
	Time          string
	ScrapeTimeout time.Duration
	// Progress receives progress lines while scraping; nil for none.
	Progress func(string)
}

// Given reports whether any source is set.
func (s Spec) Given() bool { return len(s.sources()) > 0 }

// sourceKind is one kind of metrics source a Spec can name: the flag that names it in
// messages, whether the spec gives it, and how to read it. Adding a source is a reader in a
// file of its own, its field in Spec and one entry here.
type sourceKind struct {
	flag  string
	given func(Spec) bool
	open  func(Spec, context.Context) (Input, error)
}

var sourceKinds = []sourceKind{
	{"--prometheus", func(s Spec) bool { return s.Conn.URL != "" }, Spec.openPrometheus},
	{"--scrape/--targets", func(s Spec) bool { return len(s.Scrape) > 0 || s.TargetsFile != "" }, Spec.openScrape},
	{"--file", func(s Spec) bool { return len(s.Files) > 0 }, Spec.openDumps},
	{"--log", func(s Spec) bool { return len(s.Logs) > 0 }, func(s Spec, ctx context.Context) (Input, error) { return FromLogs(ctx, s.Logs) }},
}

// sources are the kinds of source the spec sets.
func (s Spec) sources() []sourceKind {
	var given []sourceKind
	for _, k := range sourceKinds {
		if k.given(s) {
			given = append(given, k)
		}
	}
	return given
}

// labelName is a Prometheus label name as PromQL's by clause accepts it.
var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// Open checks that exactly one source is set, with options that apply to it, and reads it:
// the one entry point from a command line's metrics flags to an Input. A spec that cannot work
// is a *SpecError.
func Open(ctx context.Context, s Spec) (Input, error) {
	given := s.sources()
	if len(given) != 1 {
		if len(given) == 0 {
			return Input{}, specErrorf("give one source: --prometheus, --scrape (or --targets), --file or --log")
		}
		flags := make([]string, len(given))
		for i, k := range given {
			flags[i] = k.flag
		}
		return Input{}, specErrorf("give exactly one source, not %s", strings.Join(flags, " and "))
	}
	kind := given[0].flag
	if s.Window < 0 || (s.WindowSet && s.Window == 0) {
		// A zero window would turn every counter's increase into 0: idle replicas everywhere.
		return Input{}, specErrorf("--window %s: must be positive", s.Window)
	}
	if len(s.By) > 0 && kind == "--log" {
		return Input{}, specErrorf("--by applies to metrics, not to --log")
	}
	for _, l := range s.By {
		if !labelName.MatchString(l) {
			return Input{}, specErrorf("--by %q: not a label name (letters, digits and _, such as pod or namespace)", l)
		}
	}
	if kind != "--prometheus" {
		if s.Selector != "" {
			return Input{}, specErrorf("--selector applies to --prometheus only")
		}
		if s.Time != "" {
			return Input{}, specErrorf("--time applies to --prometheus only")
		}
	}
	return given[0].open(s, ctx)
}

func (s Spec) openDumps(ctx context.Context) (Input, error) {
	if len(s.Files) > 2 {
		return Input{}, specErrorf("--file given %d times: give one dump (lifetime totals) or two of the same replicas (rates)", len(s.Files))
	}
	in, err := FromDumps(ctx, s.Files, s.Window, s.By)
	if errors.Is(err, ErrNeedWindow) {
		return in, specErrorf("%s and %s: %v", s.Files[0], s.Files[1], err)
	}
	return in, err
}

func (s Spec) openPrometheus(ctx context.Context) (Input, error) {
	api, err := s.Conn.Querier()
	if err != nil {
		return Input{}, err
	}
	sel, err := NormalizeSelector(s.Selector)
	if err != nil {
		return Input{}, specErrorf("--selector: %v", err)
	}
	window := s.Window
	if !s.WindowSet {
		window = 5 * time.Minute
	}
	at, err := ParseTime(s.Time)
	if err != nil {
		return Input{}, err
	}
	p := Prometheus{
		API: api, URL: s.Conn.Shown(), Window: window, Selector: sel, By: s.By,
		Timeout: s.Conn.QueryTimeout, Time: at, Verbose: s.Conn.Verbose,
	}
	return p.Collect(ctx)
}

// ParseTime reads --time: RFC 3339 or Unix seconds; empty is the zero time (now).
func ParseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return time.UnixMilli(int64(f * 1000)), nil
	}
	return time.Time{}, specErrorf("--time %q: give RFC 3339 (2026-11-30T10:00:00Z) or Unix seconds", s)
}

func (s Spec) openScrape(ctx context.Context) (Input, error) {
	targets, sc, err := s.scraper()
	if err != nil {
		return Input{}, err
	}
	window := s.Window
	if !s.WindowSet {
		window = 30 * time.Second
	}
	progress := s.Progress
	if progress == nil {
		progress = func(string) {}
	}
	return sc.Collect(ctx, targets, window, progress)
}

// scraper reads the scrape targets (--scrape, --targets) and builds their scraper.
func (s Spec) scraper() ([]Target, Scraper, error) {
	raw := s.Scrape
	if s.TargetsFile != "" {
		lines, err := readTargetsFile(s.TargetsFile)
		if err != nil {
			return nil, Scraper{}, err
		}
		raw = append(raw, lines...)
	}
	targets, err := Targets(raw)
	if err != nil {
		return nil, Scraper{}, specErrorf("--scrape: %v", err)
	}
	if len(targets) == 0 {
		return nil, Scraper{}, specErrorf("--targets %s: no targets in the file", s.TargetsFile)
	}
	hc, err := s.Conn.HTTPClient()
	if err != nil {
		return nil, Scraper{}, err
	}
	return targets, Scraper{Client: hc, Timeout: s.ScrapeTimeout, By: s.By, Verbose: s.Conn.Verbose}, nil
}

// readTargetsFile reads scrape targets, separated by commas, blanks or lines; # starts a
// comment.
func readTargetsFile(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--targets: %w", err)
	}
	defer func() { _ = f.Close() }() // opened for reading: a close error loses nothing
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		out = append(out, strings.FieldsFunc(line, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })...)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--targets %s: %w", path, err)
	}
	return out, nil
}
