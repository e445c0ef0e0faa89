// Package config is the router and engine configuration linter, below the router products:
// the YAML document model with positions (Doc, Get, Str, ...), Helm-template awareness, the
// vLLM engines that Kubernetes workloads, compose files and scripts start (Engine, command
// lines, containers), the rules no product owns (the vLLM engine's, duplicate keys, flags and
// environment variables, the Gateway API Inference Extension's), the checks across the files
// of a run (Run), the --fix rewrites and their re-lint, and what assess reads of a deployment
// (DeploymentOf).
//
// Each router product adds its own detection, facts and rules by implementing Checker and the
// optional interfaces of checker.go in its package (internal/router/<product>/config.go); the
// Linter is given the checkers in the registry's order (router.Checkers) and never names a
// product. lint detects the files and hands their YAML documents, or their text, to a File.
package config
