package main

import (
	"errors"
	"time"

	"github.com/spf13/pflag"

	"github.com/kvcheck/kvcheck/internal/events"
	"github.com/kvcheck/kvcheck/internal/promql"
	"github.com/kvcheck/kvcheck/internal/usage"
)

// bindConn registers the connection flags of a Prometheus-compatible API into c: --prometheus
// and its auth, TLS and limits (lint, and every command that reads metrics).
func bindConn(fs *pflag.FlagSet, c *promql.Conn) {
	fs.StringVar(&c.URL, "prometheus", "", "base URL of a Prometheus-compatible API (Prometheus, Thanos, Mimir, ...)")
	fs.StringVar(&c.HTTPConfigFile, "http-config-file", "", "Prometheus HTTP client config YAML (auth, TLS, headers, proxy), as promtool's --http.config.file")
	fs.StringVar(&c.BearerTokenFile, "bearer-token-file", "", "file holding a bearer token")
	fs.StringVar(&c.BasicAuthUser, "basic-auth-user", "", "basic auth user name (password from --basic-auth-password-file)")
	fs.StringVar(&c.BasicAuthPasswordFile, "basic-auth-password-file", "", "file holding the basic auth password")
	fs.StringVar(&c.CAFile, "ca-file", "", "CA certificate file to verify the server")
	fs.StringVar(&c.CertFile, "cert-file", "", "client certificate file (mutual TLS)")
	fs.StringVar(&c.KeyFile, "key-file", "", "client key file (mutual TLS)")
	fs.StringVar(&c.ServerName, "tls-server-name", "", "server name to verify the certificate against")
	fs.BoolVar(&c.InsecureSkipVerify, "insecure-skip-verify", false, "do not verify the server certificate")
	fs.StringArrayVar(&c.Headers, "header", nil, `extra request header "Name: value" (repeatable; for example X-Scope-OrgID for Mimir)`)
	fs.DurationVar(&c.QueryTimeout, "query-timeout", 30*time.Second, "timeout of each query")
	fs.BoolVar(&c.Verbose, "verbose", false, "show the start of an error answer's body in HTTP errors (it may reflect request headers)")
	fs.IntVar(&c.MaxResponseMiB, "max-response-mib", promql.DefaultMaxResponse>>20, "largest HTTP answer read from Prometheus or a /metrics target, in MiB; a larger one is an error")
}

// bindMetrics registers the metrics-source flags into s, the one flag set of every command
// that reads vLLM metrics (hitrate, assess). A new source is a field of promql.Spec, read in
// promql.Open, plus its flag line here.
func bindMetrics(fs *pflag.FlagSet, s *promql.Spec) {
	bindConn(fs, &s.Conn)
	fs.StringSliceVar(&s.Scrape, "scrape", nil, "replica /metrics targets (host:port or URL), comma-separated or repeated")
	fs.StringVar(&s.TargetsFile, "targets", "", "file listing scrape targets, one per line")
	fs.StringArrayVar(&s.Files, "file", nil, "saved /metrics dump (give one, or two of the same replicas for rates)")
	fs.StringArrayVar(&s.Logs, "log", nil, "vLLM server log file (repeatable)")
	fs.DurationVar(&s.Window, "window", 0, "rate window (default 5m for --prometheus, 30s for --scrape; the time between two --file dumps without timestamps)")
	fs.StringVar(&s.Selector, "selector", "", `extra label matchers for --prometheus, such as 'namespace="prod",job="vllm"'`)
	fs.StringSliceVar(&s.By, "by", nil, "replica labels (default: pod, else instance; engines summed; add engine to split them)")
	fs.StringVar(&s.Time, "time", "", "evaluation time for --prometheus (RFC 3339 or Unix seconds; default now)")
	fs.DurationVar(&s.ScrapeTimeout, "scrape-timeout", 10*time.Second, "timeout of each /metrics request with --scrape")
}

// isUsage reports whether err comes from how the command was called: a usage error typed
// where it arose, or a source spec that cannot work (a metrics source, tap endpoints).
func isUsage(err error) bool {
	var se *promql.SpecError
	var ee *events.EndpointError
	return usage.Is(err) || errors.As(err, &se) || errors.As(err, &ee)
}
