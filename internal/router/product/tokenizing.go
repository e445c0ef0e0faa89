package product

// Tokenizing is a Router some of whose policies tokenize each prompt in the router itself (to
// match the engines' blocks of tokens): deploying one in place of another product's router adds
// a tokenizer of the served model beside it, which no requirement names (the files cannot show
// one missing).
type Tokenizing interface {
	// Tokenizes says where policy tokenizes prompts, as what deploying it adds ("a tokenizer of
	// the served model in the EPP ..."); "" when policy reads no tokens.
	Tokenizes(policy string) string
}
