//go:build !unix

package files

import (
	"io/fs"
	"path/filepath"
)

// fileID is a file's identity where the system gives no inode: its absolute path with links
// resolved.
type fileID struct{ path string }

func idOf(path string, _ fs.FileInfo) fileID {
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		p = path
	}
	if a, err := filepath.Abs(p); err == nil {
		p = a
	}
	return fileID{p}
}

// nonBlock: no named pipes to open here.
const nonBlock = 0
