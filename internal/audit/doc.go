// Package audit finds what breaks the prefix cache early in prompts, in units of KV-cache
// blocks: dynamic values in chat templates and prompt modules (where they land, how often they
// change), and in real request logs the shareable prefill and where requests leave the shared
// prefix. It tokenizes by estimate or through a vLLM server (Connect), and its request reader
// and Fixer feed the simulator and assess too.
package audit
