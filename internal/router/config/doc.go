// Package config checks router and engine configuration files: LiteLLM proxy configs, llm-d
// EndpointPickerConfigs and router values, production-stack values and vllm_router command
// lines, Dynamo graphs, SGLang gateways, Ray Serve configs, and the vLLM engines that
// Kubernetes workloads, compose files and scripts start. Documents are told by content; each
// rule of the router facts table (ROUTERS.md) is one code in rules.go, with the source it was
// read in. Checks that need several files of a run (an engine's KV-event endpoint against the
// router that subscribes to it) run over the facts each file records (Cross), and a finding
// whose fix is one unambiguous edit carries it, checked by linting the result again.
//
// lint detects the files and hands their YAML documents (or their text) to a File; kvcheck
// assess reads what the files show of a deployment with DeploymentOf.
package config
