package config

import (
	"testing"
)

// TestVLLMImageVersion: only vLLM's own images (and vllm-openai rebuilds) carry vLLM's
// release in their tag; Dynamo's vllm-runtime carries Dynamo's (1.3.1 is no vLLM release).
func TestVLLMImageVersion(t *testing.T) {
	for _, tt := range []struct {
		image, want string
	}{
		{"vllm/vllm-openai:v0.11.0", "0.11.0"},
		{"docker.io/vllm/vllm-openai:v0.26.1", "0.26.1"},
		{"vllm/vllm-tpu:v0.20.0", "0.20.0"},
		{"registry.example.com/team/vllm-openai:v0.30.2-cu128", "0.30.2"},
		{"nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1", ""},
		{"ghcr.io/llm-d/llm-d-cuda:v0.4.0", ""},
		{"lmcache/vllm-openai:v0.3.9", ""},
		{"vllm/vllm-openai:latest", ""},
		{"vllm-openai", ""},
	} {
		v, ok := VLLMImageVersion(tt.image)
		if got := v.String(); got != tt.want || ok != (tt.want != "") {
			t.Errorf("%s: %q, %v; want %q", tt.image, got, ok, tt.want)
		}
	}
}
