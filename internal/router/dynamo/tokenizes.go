package dynamo

// Tokenizes implements product.Tokenizing: the KV router matches the engines' blocks of tokens,
// which the frontend's preprocessor computes from each prompt with the served model's
// tokenizer: the router counts a request's new prefill as its input tokens less the overlapping
// blocks times the block size (docs.nvidia.com/dynamo design-docs/component-design/router-design,
// "KV Router Architecture"; the frontend's tokenizer page); round-robin reads none.
func (Router) Tokenizes(policy string) string {
	if policy == "dynamo-kv" {
		return "a tokenizer of the served model in the frontend (the KV router matches the engines' blocks of tokens)"
	}
	return ""
}
