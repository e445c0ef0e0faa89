package audit

import "bytes"

// Raw returns the input line of the request Next last returned, without surrounding space. It
// is valid until the next call to Next. Readers that need fields the audit does not keep (a
// simulator reads timestamps and max_tokens) decode it themselves instead of splitting the
// input a second time.
func (rr *RequestReader) Raw() []byte {
	return bytes.TrimSpace(rr.buf)
}
