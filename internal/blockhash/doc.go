// Package blockhash computes vLLM-compatible prefix-cache block hashes (sha256_cbor) so a stream's hashes can be checked outside the engine.
package blockhash
