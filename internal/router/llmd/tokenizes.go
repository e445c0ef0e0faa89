package llmd

// Tokenizes implements product.Tokenizing: the precise prefix-cache scorer keys its index on
// the engines' block keys, which it recomputes from tokens, so the EPP tokenizes every prompt
// itself: its token-producer, whose estimate backend's ids are not the engine's and whose vllm
// backend calls a vLLM server's render endpoints (Settings.Tokenizer; ROUTERS.md §2,
// "Tokenizer"); the approximate producer reads no engine tokens.
func (Router) Tokenizes(policy string) string {
	if policy == "llmd-precise" {
		return "a tokenizer of the served model for the EPP (its token-producer with the vllm backend: the precise scorer matches the engines' blocks of tokens)"
	}
	return ""
}
