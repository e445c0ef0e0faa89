// Package units writes quantities as a person reads them in a hurry: durations in ms, s, min,
// h or days at a precision that suits their size, large counts with k and M, bytes in KB, MB
// and GB, and parts of a whole as "3 of 8 replicas". Figures a reader checks by hand stay
// exact where they are small enough to read (counts under 100,000).
package units

import (
	"fmt"
	"math"
	"strconv"
)

// Duration writes a length of time given in seconds: "40 ms", "1.5 s", "12 s", "23 min",
// "2.8 h", "3.1 days". Two significant figures below 10 of a unit, whole units above.
func Duration(seconds float64) string {
	s := seconds
	switch {
	case math.IsNaN(s) || math.IsInf(s, 0):
		return "unknown"
	case s < 0:
		return "-" + Duration(-s)
	case s == 0:
		return "0 s"
	case s < 0.001:
		return sig(s*1e6) + " µs"
	case s < 1:
		return sig(s*1e3) + " ms"
	case s < 120:
		return sig(s) + " s"
	case s < 7200:
		return sig(s/60) + " min"
	case s < 2*86400:
		return sig(s/3600) + " h"
	}
	return sig(s/86400) + " days"
}

// sig writes v with one decimal below 10 and none from 10 up: 1.5, 12, 240.
func sig(v float64) string {
	if v < 9.95 {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(math.Round(v), 'f', 0, 64)
}

// Count writes a count exactly under 100,000 (29371) and with k or M above: "524k", "1.0M",
// "12.6M", "1.2G".
func Count(n int64) string {
	if n < 0 {
		return "-" + Count(-n)
	}
	v := float64(n)
	switch {
	case n < 100_000:
		return strconv.FormatInt(n, 10)
	case v < 999_500:
		return fmt.Sprintf("%.0fk", v/1e3)
	case v < 99.95e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v < 999.5e6:
		return fmt.Sprintf("%.0fM", v/1e6)
	}
	return fmt.Sprintf("%.1fG", v/1e9)
}

// Bytes writes a size in bytes: "512 B", "31.8 KB", "1.2 GB" (powers of 1024).
func Bytes(b float64) string {
	const k = 1024
	switch {
	case b >= k*k*k:
		return fmt.Sprintf("%.1f GB", b/(k*k*k))
	case b >= k*k:
		return fmt.Sprintf("%.1f MB", b/(k*k))
	case b >= k:
		return fmt.Sprintf("%.1f KB", b/k)
	}
	return fmt.Sprintf("%.0f B", b)
}

// Of writes a part of a whole with the noun in the whole's number: "3 of 8 replicas", "1 of
// 1 replica", "none of 120 requests" (0 reads as none).
func Of(n, total int64, noun string) string {
	if total != 1 {
		noun += "s"
	}
	if n == 0 {
		return fmt.Sprintf("none of %d %s", total, noun)
	}
	return fmt.Sprintf("%d of %d %s", n, total, noun)
}

// Plural writes n and the noun, plural unless n is 1: "1 replica", "3 replicas".
func Plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.FormatInt(n, 10) + " " + noun + "s"
}
