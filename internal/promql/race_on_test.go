//go:build race

package promql

// raceEnabled shrinks the streaming test under the race detector, which runs it ten times slower.
const raceEnabled = true
