// Package rng is the core's only source of randomness: a small seeded generator
// (SplitMix64). Same seed, same stream, on every platform.
//
// It is driven by calls, not events: a core machine holds a *Rand handed to it at
// construction. The daemon seeds it from crypto/rand in the shell; the simulator seeds it
// from the run's seed and gives each component its own stream with Fork, so adding draws
// in one component does not shift another's.
package rng
