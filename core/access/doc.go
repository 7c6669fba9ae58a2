// Package access is Narad's access model as pure rules: who a user may be (usernames,
// password lengths), what a grant is and which requests it allows, and the throttle of
// failed logins. It holds no users and checks no password: users and their bcrypt hashes
// live in the replicated metastore (core/meta), and the HTTP shell verifies a password
// against the hash its replica holds. Like every core package it does no I/O, reads no
// clock and draws no random number: time comes in as nowNs arguments.
//
// # Grants
//
// A grant is an action and the topic patterns it covers (API.md, "Access"):
//
//	{"action": "produce", "patterns": ["orders", "billing.*"]}
//
// A pattern is an exact topic name, or a prefix of one followed by "*" ("*" alone covers
// every topic). produce covers producing; consume covers consuming, ack, nack, extend and
// replay; create covers creating, patching and deleting matching topics; admin takes no
// patterns and covers everything, users and the cluster routes included. Normalize merges
// a list of grants into at most one per action, in the order of Actions, with sorted,
// distinct patterns, so that equal rights give equal bytes on every replica.
//
// # Driving the throttle
//
//	t := access.NewThrottle(access.DefaultThrottleConfig())
//	if !t.Allow(now, name, known) { answer 429 }        // before any bcrypt check
//	if ok := bcryptCheck(...); ok { t.Succeeded(name) } else { t.Failed(now, name, known) }
//
// A known username (one the replica holds) has its own budget, LoginBurst failures and then
// one per LoginRefillNs; every unknown username shares one node-wide budget, so that a
// spray of made-up names cannot use up a real user's tries. A success clears the user's
// failures.
package access
