// Package lint finds renamed and removed vLLM metric names in dashboards, rules and autoscaler
// configs, and hands the router and engine configuration files it detects to
// internal/router/config, whose findings it reports beside its own.
package lint
