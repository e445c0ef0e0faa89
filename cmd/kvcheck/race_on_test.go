//go:build race

package main

// raceEnabled skips the tests that measure peak heap at a bound: the race detector multiplies
// both their time and their memory.
const raceEnabled = true
