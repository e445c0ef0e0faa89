// Package catalog holds the history of vLLM's metric names (an embedded data file) and matches names as dashboards and autoscalers write them.
package catalog
