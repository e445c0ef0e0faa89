// Package events receives and decodes vLLM's ZMQ KV-event stream and accounts for every batch: loss, restarts, replay and recordings.
package events
