//go:build !unix

package files

import (
	"fmt"
	"os"
)

// readOpen reads the regular file at path through os.File, after checking it still is one.
func readOpen(path string, limit int64, buf []byte) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if k := KindOf(st.Mode()); k != Regular {
		return nil, fmt.Errorf("%s since it was first looked at: not read", k)
	}
	return readLimited(f, limit, st.Size(), buf[:0])
}
