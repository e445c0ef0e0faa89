// Package advise turns the evidence of the other analyses into a recommendation: session affinity, a KV-aware router, nothing, or fix this first.
package advise
