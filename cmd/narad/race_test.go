//go:build race

package main

// raceEnabled: the tests run under the race detector, and the binary the crash test
// builds is built with it too (so that the build reuses the test build's packages).
const raceEnabled = true
