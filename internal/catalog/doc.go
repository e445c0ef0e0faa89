// Package catalog holds the history of the metric names of vLLM, the llm-d router and the
// Gateway API Inference Extension (an embedded data file, one family each) and matches names as
// dashboards, rules and autoscalers write them; lint, hitrate and kvcheck metrics judge names
// through it.
package catalog
