// Package auth authenticates the HTTP API's requests (issue 12; API.md, "Access"): HTTP
// Basic credentials checked against the bcrypt hashes of the node's metastore replica,
// with a bounded cache of verified credentials and the failed-login throttle of
// core/access. It is a shell package: it reads the clock, draws its key from crypto/rand
// and is safe for concurrent use.
//
// The node shell hands it the replica's users after every step that may have changed them
// (SetUsers, from node.Users when node.UsersVersion moved), so a request is authorized
// against the replica as it is when the request arrives: a password changed or a grant
// revoked is in force on this node as soon as its replica applied the change.
//
// A verified credential is cached as a SHA-256 of a key drawn at start and the password,
// next to the hash it was verified against: a later request with the same password skips
// bcrypt only while the user's hash is still that one, so a changed password (a new hash,
// bcrypt salts every hash) or a deleted user stops the old credential at once. The cache
// holds at most CacheMax entries. Comparisons are constant-time.
package auth
