package audit

import (
	"fmt"
	"io"
	"os"
)

// OpenRequests opens a request log: the file, or stdin for "-"; name is what messages and
// reports call it. closeFn closes the file.
func OpenRequests(path string, stdin io.Reader) (r io.Reader, name string, closeFn func(), err error) {
	if path == "-" {
		return stdin, "standard input", func() {}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, "", nil, fmt.Errorf("open request log: %w", err)
	}
	return f, path, func() { _ = f.Close() }, nil // read only: nothing to lose on close
}
