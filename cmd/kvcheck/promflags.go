package main

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/config"
	"github.com/spf13/pflag"

	"github.com/kvcheck/kvcheck/internal/promql"
)

// promOptions are the connection flags for a Prometheus-compatible HTTP API (Prometheus, Thanos,
// Mimir, Cortex, VictoriaMetrics). Secrets are read from files, never taken on the command line.
type promOptions struct {
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
	MaxResponseMiB        int
	Verbose               bool
}

// bind registers the flags; the URL flag is named by the caller's command as --prometheus.
func (o *promOptions) bind(fs *pflag.FlagSet) {
	fs.StringVar(&o.URL, "prometheus", "", "base URL of a Prometheus-compatible API (Prometheus, Thanos, Mimir, ...)")
	fs.StringVar(&o.HTTPConfigFile, "http-config-file", "", "Prometheus HTTP client config YAML (auth, TLS, headers, proxy), as promtool's --http.config.file")
	fs.StringVar(&o.BearerTokenFile, "bearer-token-file", "", "file holding a bearer token")
	fs.StringVar(&o.BasicAuthUser, "basic-auth-user", "", "basic auth user name (password from --basic-auth-password-file)")
	fs.StringVar(&o.BasicAuthPasswordFile, "basic-auth-password-file", "", "file holding the basic auth password")
	fs.StringVar(&o.CAFile, "ca-file", "", "CA certificate file to verify the server")
	fs.StringVar(&o.CertFile, "cert-file", "", "client certificate file (mutual TLS)")
	fs.StringVar(&o.KeyFile, "key-file", "", "client key file (mutual TLS)")
	fs.StringVar(&o.ServerName, "tls-server-name", "", "server name to verify the certificate against")
	fs.BoolVar(&o.InsecureSkipVerify, "insecure-skip-verify", false, "do not verify the server certificate")
	fs.StringArrayVar(&o.Headers, "header", nil, `extra request header "Name: value" (repeatable; for example X-Scope-OrgID for Mimir)`)
	fs.DurationVar(&o.QueryTimeout, "query-timeout", 30*time.Second, "timeout of each query")
	fs.BoolVar(&o.Verbose, "verbose", false, "show the start of an error answer's body in HTTP errors (it may reflect request headers)")
	fs.IntVar(&o.MaxResponseMiB, "max-response-mib", promql.DefaultMaxResponse>>20, "largest HTTP answer read from Prometheus or a /metrics target, in MiB; a larger one is an error")
}

// shownURL is --prometheus as it may be shown: without the password of its userinfo.
func (o *promOptions) shownURL() string { return promql.RedactURL(o.URL) }

// httpConfig builds the client configuration from the config file and the flags; flags win.
func (o *promOptions) httpConfig() (config.HTTPClientConfig, error) {
	cfg := config.DefaultHTTPClientConfig
	if o.HTTPConfigFile != "" {
		c, _, err := config.LoadHTTPConfigFile(o.HTTPConfigFile)
		if err != nil {
			return cfg, usageErrorf("--http-config-file %s: %v", o.HTTPConfigFile, err)
		}
		cfg = *c
	}
	if o.BearerTokenFile != "" {
		cfg.Authorization = &config.Authorization{Type: "Bearer", CredentialsFile: o.BearerTokenFile}
	}
	if o.BasicAuthUser != "" || o.BasicAuthPasswordFile != "" {
		if o.BasicAuthUser == "" || o.BasicAuthPasswordFile == "" {
			return cfg, usageErrorf("basic auth needs both --basic-auth-user and --basic-auth-password-file")
		}
		cfg.BasicAuth = &config.BasicAuth{Username: o.BasicAuthUser, PasswordFile: o.BasicAuthPasswordFile}
	}
	if o.CAFile != "" {
		cfg.TLSConfig.CAFile = o.CAFile
	}
	if o.CertFile != "" || o.KeyFile != "" {
		if o.CertFile == "" || o.KeyFile == "" {
			return cfg, usageErrorf("mutual TLS needs both --cert-file and --key-file")
		}
		cfg.TLSConfig.CertFile, cfg.TLSConfig.KeyFile = o.CertFile, o.KeyFile
	}
	if o.ServerName != "" {
		cfg.TLSConfig.ServerName = o.ServerName
	}
	if o.InsecureSkipVerify {
		cfg.TLSConfig.InsecureSkipVerify = true
	}
	if len(o.Headers) > 0 {
		if cfg.HTTPHeaders == nil {
			cfg.HTTPHeaders = &config.Headers{Headers: map[string]config.Header{}}
		}
		for _, h := range o.Headers {
			name, value, ok := strings.Cut(h, ":")
			name = strings.TrimSpace(name)
			if !ok || name == "" {
				return cfg, usageErrorf("--header %q: write it as \"Name: value\"", h)
			}
			cur := cfg.HTTPHeaders.Headers[http.CanonicalHeaderKey(name)]
			cur.Values = append(cur.Values, strings.TrimSpace(value))
			cfg.HTTPHeaders.Headers[http.CanonicalHeaderKey(name)] = cur
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, usageErrorf("prometheus connection settings: %v", err)
	}
	return cfg, nil
}

// httpClient returns an HTTP client with the configured auth and TLS. It is also used for
// direct /metrics scrapes, which often sit behind the same proxy.
func (o *promOptions) httpClient() (*http.Client, error) {
	cfg, err := o.httpConfig()
	if err != nil {
		return nil, err
	}
	if o.MaxResponseMiB < 0 {
		return nil, usageErrorf("--max-response-mib %d: give a positive number of MiB", o.MaxResponseMiB)
	}
	c, err := config.NewClientFromConfig(cfg, "kvcheck")
	if err != nil {
		return nil, fmt.Errorf("prometheus connection settings: %w", err)
	}
	c.Transport = promql.CapResponses(c.Transport, int64(o.MaxResponseMiB)<<20) // 0: the default
	return c, nil
}

// api returns the Prometheus v1 API client for --prometheus.
func (o *promOptions) api() (promv1.API, error) {
	u, err := url.Parse(o.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, usageErrorf("--prometheus %q: give the base URL, such as http://prometheus:9090", o.shownURL())
	}
	hc, err := o.httpClient()
	if err != nil {
		return nil, err
	}
	c, err := api.NewClient(api.Config{Address: o.URL, Client: hc})
	if err != nil {
		return nil, fmt.Errorf("--prometheus %s: %w", o.shownURL(), err)
	}
	return promv1.NewAPI(c), nil
}
