// Package lint finds renamed and removed vLLM metric names in dashboards, rules and autoscaler configs, and router and engine configuration traps.
package lint
