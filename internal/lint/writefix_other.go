//go:build !unix

package lint

import (
	"io/fs"
	"os"
)

// noFollow: no O_NOFOLLOW here; a temporary file's name is checked by Lstat instead.
const noFollow = 0

// writable: the rename reports a file this user may not replace.
func writable(string) error { return nil }

// links: hard links are not counted here.
func links(fs.FileInfo) uint64 { return 1 }

// keepOwner: no owners to keep here.
func keepOwner(*os.File, fs.FileInfo) error { return nil }

// ownerOf names no owner here.
func ownerOf(fs.FileInfo) string { return "another user" }

// lockFile: no flock here; an open file cannot be removed on Windows anyway.
func lockFile(*os.File, bool) error { return nil }
