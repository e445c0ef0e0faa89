// Package fleet emulates vLLM replicas on loopback (metrics, /tokenize, KV events) for the demo and for tests.
package fleet
