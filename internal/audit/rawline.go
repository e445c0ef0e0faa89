package audit

import "bytes"

// Raw returns the input line of the request Next last returned, without surrounding space. It
// is valid until the next call to Next. Readers that need fields the audit does not keep (a
// simulator reads timestamps and max_tokens) decode it themselves instead of splitting the
// input a second time.
func (rr *RequestReader) Raw() []byte {
	return bytes.TrimSpace(rr.buf)
}

// bigLine is the size from which the line buffer is let go after use (Release) rather than
// kept for the next line.
const bigLine = 1 << 20

// Release lets go of the line buffer when it holds more than 1 MiB, so that what the caller
// makes of the request next (its rendered prompt, its tokens) does not share the heap with
// the line it came from: a 60 MB line is then held once, not twice. Raw is empty after it;
// the next line gets a buffer of its own size.
func (rr *RequestReader) Release() {
	if cap(rr.buf) > bigLine {
		rr.buf = nil
	}
}
