//go:build !race

package promql

const raceEnabled = false
