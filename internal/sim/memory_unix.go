//go:build unix

package sim

import (
	"runtime"
	"syscall"
)

// peakResident is the largest resident set this process has had so far, in bytes: what
// reading a trace up to a limit really took, as the system counts it (getrusage's ru_maxrss,
// kilobytes on Linux, bytes on macOS). 0 when the system does not say.
func peakResident() uint64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil || ru.Maxrss <= 0 {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return uint64(ru.Maxrss)
	}
	return uint64(ru.Maxrss) << 10
}
