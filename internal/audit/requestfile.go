package audit

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
)

// OpenRequests opens a request log: the file, or stdin for "-"; name is what messages and
// reports call it. closeFn closes the file. A UTF-8 byte order mark at the start (PowerShell's
// Out-File and Notepad write one) is skipped, as RFC 8259 lets a JSON reader do: the first
// request is then read, not skipped as "not a JSON object".
func OpenRequests(path string, stdin io.Reader) (r io.Reader, name string, closeFn func(), err error) {
	if path == "-" {
		r, err := skipBOM(stdin, "standard input")
		return r, "standard input", func() {}, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, "", nil, fmt.Errorf("open request log: %w", err)
	}
	closeFn = func() { _ = f.Close() } // read only: nothing to lose on close
	if r, err = skipBOM(f, path); err != nil {
		closeFn()
		return nil, "", nil, err
	}
	return r, path, closeFn, nil
}

// utf8BOM is the UTF-8 byte order mark.
var utf8BOM = []byte{0xef, 0xbb, 0xbf}

// skipBOM returns r without a leading UTF-8 byte order mark. UTF-16 text (PowerShell 5's
// default for Out-File and ">") is refused by name: every line of it would be skipped as not
// JSON.
func skipBOM(r io.Reader, name string) (io.Reader, error) {
	br := bufio.NewReader(r)
	b, _ := br.Peek(len(utf8BOM))
	switch {
	case bytes.HasPrefix(b, utf8BOM):
		_, _ = br.Discard(len(utf8BOM)) // peeked: the bytes are buffered
	case bytes.HasPrefix(b, []byte{0xff, 0xfe}), bytes.HasPrefix(b, []byte{0xfe, 0xff}):
		return nil, fmt.Errorf("request log %s: saved as UTF-16 text (PowerShell 5's Out-File or > writes it): save it as UTF-8 (Out-File -Encoding utf8)", name)
	}
	return br, nil
}
