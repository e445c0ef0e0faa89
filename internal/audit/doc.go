// Package audit finds dynamic content early in prompt templates and real requests, in units of KV-cache blocks.
package audit
