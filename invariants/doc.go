// Package invariants holds the checks of DESIGN.md section 5, written against durable
// images and client histories only, never against a machine's private state, so that a
// bug in a machine cannot hide itself from its check. The simulator calls them after
// every step that can change what they look at.
package invariants
