// Package sim replays request traces through a model of a vLLM fleet under routing policies.
package sim
