package clustersim

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/narad/narad/core/access"
	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/core/node"
	"github.com/narad/narad/io/auth"
)

// Users (issue 12, point 7). In most seeds (Options.Users) every producer and consumer is
// a user of its own, made by the admin once the main topic exists, and the admin keeps
// changing them under load: it revokes and restores their grants, changes their
// passwords and deletes and recreates them (UserGapNs). The simulator plays the HTTP
// layer of the node a client asks (gate): io/auth's Authenticator, fed the node's replica
// as the shell feeds it, checks the client's password, and the grant decides; a refused
// request (401, 403, 429, or 503 before the replica holds a user) is never submitted.
// A routed consume or ack carries the user to the partition's owner, which checks the
// grant again from its own replica.
//
// Checked (access.go):
//   - at the node a client asks, its answer is its replica's at that instant: a password
//     is taken only if the replica holds its hash (a changed password or a deleted user
//     stops there at once, whatever the node cached), a right one is not refused, and the
//     grant is the replica's (or the user created the topic);
//   - at a partition's owner, a routed consume or ack made for a user is served (status
//     OK) only if the owner's replica granted it when the request arrived, and refused
//     (403) only if it did not;
//   - a produce refused at the gate is a definite refusal: never delivered (the model's
//     refused set, invariant 3).
//
// While healing the clients consume and ack as the system (an operator draining with
// admin rights), so that a revoked grant cannot hold back invariant 2.

// Shares of a user's requests, in percent: with its previous password (a client not yet
// told), and with the password being set while the change is unanswered.
const (
	stalePercent   = 1
	pendingPercent = 10
)

// simUser is a client's user as the admin last heard of it.
type simUser struct {
	name     string
	action   access.Action
	made     bool   // a create was answered once: the setup is over for it
	exists   bool   // as the last answer said
	revoked  bool   // its grants cover no topic of the run, as the last answer said
	password string // in force, as the last answer said
	pending  string // being set: sent, not answered
	previous string
}

// accessState is the run's users and what the owner check saw arrive.
type accessState struct {
	users  []*simUser // by client
	hasher simHasher
	salts  uint64
	key    [32]byte
	routed map[routedKey]routedReq
	next   int    // the user the next change is about (round robin)
	seq    uint64 // the latest evUser scheduled (event.epoch): the others are void
}

// routedKey names a routed consume or ack at its owner: the owner's process, the sender,
// which of the two, and the sender's request id.
type routedKey struct {
	epoch, from uint64
	ack         bool
	id          uint64
}

// routedReq is a routed request made for a user, as it arrived at the owner.
type routedReq struct {
	actor, topic string
	granted      bool // the owner's replica granted it then
}

func (u *run) initUsers() {
	u.acc = accessState{hasher: simHasher{salts: &u.acc.salts}, routed: map[routedKey]routedReq{}}
	u.acc.hasher.salts = &u.acc.salts
	for c := range u.o.Producers + u.o.Consumers {
		su := &simUser{name: fmt.Sprintf("c%d", c), action: access.Consume}
		if u.isProducer(c) {
			su.name, su.action = fmt.Sprintf("p%d", c), access.Produce
		}
		su.password = "password-" + su.name + "-0"
		u.acc.users = append(u.acc.users, su)
	}
}

// grants are a user's grants: its action on both topics of the run, or (revoked) on
// another topic only.
func (su *simUser) grants(revoked bool) []access.Grant {
	if revoked {
		return []access.Grant{{Action: su.action, Patterns: []string{"x*"}}}
	}
	return []access.Grant{{Action: su.action, Patterns: []string{churnTopic + "*", topic}}}
}

// newAuthenticator is a node process's Authenticator: the simulator's hasher, a fixed
// key and the node's clock.
func (u *run) newAuthenticator(mb *member) *auth.Authenticator {
	return auth.NewWith(auth.Config{Hasher: u.acc.hasher, Key: &u.acc.key,
		Now: func() time.Time { return time.Unix(0, u.nowOf(mb)) }})
}

// syncUsers hands the node's Authenticator its replica's users when they may have
// changed, as io/nodeshell.WatchUsers does after a step.
func (u *run) syncUsers(mb *member) {
	if mb.users != nil && mb.usersVersion == mb.n.UsersVersion() {
		return
	}
	mb.usersVersion = mb.n.UsersVersion()
	us := mb.n.Users()
	mb.users = make(map[string]meta.User, len(us))
	for _, x := range us {
		mb.users[x.Name] = x
	}
	mb.owners = mb.n.TopicOwners()
	mb.auth.SetUsers(us)
	mb.auth.SetOwners(mb.owners)
}

// replicaAllows is what node mb's replica says now of user name doing action on topic.
func (u *run) replicaAllows(mb *member, name string, action access.Action, topic string) bool {
	x, ok := mb.users[name]
	return (ok && access.Allows(x.Grants, action, topic)) || (action != access.Admin && mb.owners[topic] == name)
}

// gate is the HTTP layer of node i for client c's request of action on name: the actor
// to make it for, or false when it is refused (and nothing is submitted).
func (u *run) gate(i, c int, action access.Action, name string) (string, bool) {
	if !u.o.Users || u.healing {
		return meta.SystemActor, true
	}
	mb, su := u.members[i], u.acc.users[c]
	u.syncUsers(mb)
	if len(mb.users) == 0 {
		u.stats.AuthNotReady++ // 503: the replica holds no user yet
		return "", false
	}
	pw := su.pick(u)
	id, err := mb.auth.Authenticate(su.name, pw)
	held, known := mb.users[su.name]
	holds := known && u.acc.hasher.Compare(held.Hash, pw)
	switch {
	case err == nil && !holds:
		u.violate(fmt.Errorf("access: node %d took user %q's password %q, which its replica does not hold (changed, or the user deleted)", mb.id, su.name, pw))
	case errors.Is(err, auth.ErrNoCredentials) && holds:
		u.violate(fmt.Errorf("access: node %d refused user %q's password %q, which its replica holds", mb.id, su.name, pw))
	case errors.Is(err, auth.ErrThrottled):
		u.stats.AuthThrottled++
	case err != nil:
		u.stats.AuthUnauthorized++
	}
	if err != nil {
		return "", false
	}
	u.stats.GateChecks++
	want := u.replicaAllows(mb, su.name, action, name)
	if got := id.Allows(action, name); got != want {
		u.violate(fmt.Errorf("access: node %d answered %v to %q doing %s on %q; its replica's grants say %v", mb.id, got, su.name, action, name, want))
	}
	if !want {
		u.stats.AuthForbidden++
		return "", false
	}
	return su.name, true
}

// pick draws the password a user's client sends: the one in force, now and then its
// previous one (a stale client), or, while a change is unanswered, the new one as often.
func (su *simUser) pick(u *run) string {
	switch {
	case su.pending != "" && u.r.Intn(100) < pendingPercent:
		return su.pending
	case su.previous != "" && u.r.Intn(100) < stalePercent:
		return su.previous
	}
	return su.password
}

// refuseProduce notes a produce refused at the gate: a definite refusal (never
// delivered), and the client backs off.
func (u *run) refuseProduce(c int, ids []uint64) {
	for _, id := range ids {
		u.m.refused[id] = true
		u.m.sent[id].endNs = u.s.Now()
	}
	u.stats.Refused += uint64(len(ids))
	u.s.At(u.think()+errorBackoffNs, event{kind: evClient, client: c})
}

// userAnswerWaitNs is how long the admin waits for an answer to a change before it sends
// the next (an HTTP client's timeout): a proposal may stay unanswered for the
// metastore's request timeout, or for ever if its node's process is lost.
const userAnswerWaitNs = 2_000_000_000

// userStep sends the admin's next change of a user, on a node that is up: the setup
// first (every user created once), then, user after user, a new password, a revocation
// of its grants or a delete, each undone by the next change (the grants restored, the
// user created again with its password).
func (u *run) userStep(seq uint64) {
	if u.healing || seq != u.acc.seq {
		return // not the latest scheduled: an answer or a timeout came first
	}
	i, ok := u.upNode()
	if !ok {
		u.atUserStep(u.after(u.o.UserGapNs))
		return
	}
	su := u.acc.users[u.acc.next%len(u.acc.users)]
	req := request{client: adminClient, kind: reqUser, topic: su.name}
	var f func(n *node.Node, now int64, tok uint64)
	switch roll := u.r.Intn(100); {
	case !su.exists:
		hash, _ := u.acc.hasher.Hash(su.password)
		req.change = userCreate
		f = func(n *node.Node, now int64, tok uint64) {
			n.CreateUser(now, tok, meta.SystemActor, su.name, hash, su.grants(false))
		}
	case su.pending != "" || (!su.revoked && roll < 35):
		if su.pending == "" {
			su.pending = fmt.Sprintf("password-%s-%d", su.name, u.acc.salts+1)
		}
		hash, _ := u.acc.hasher.Hash(su.pending)
		req.change = userPassword
		f = func(n *node.Node, now int64, tok uint64) {
			n.SetUserPassword(now, tok, meta.SystemActor, su.name, hash)
		}
	case su.revoked || roll < 85:
		grants := su.grants(!su.revoked)
		req.change = userGrants
		f = func(n *node.Node, now int64, tok uint64) {
			n.SetUserGrants(now, tok, meta.SystemActor, su.name, grants)
		}
	default:
		req.change = userDelete
		f = func(n *node.Node, now int64, tok uint64) { n.DeleteUser(now, tok, meta.SystemActor, su.name) }
	}
	u.stats.UserOps++
	u.record('U', uint64(i), uint64(req.change))
	u.atUserStep(u.s.Now() + userAnswerWaitNs)
	u.submitReq(i, req, f)
}

// atUserStep schedules the admin's next change at atNs, in place of any scheduled before.
func (u *run) atUserStep(atNs int64) {
	u.acc.seq++
	u.s.At(atNs, event{kind: evUser, epoch: u.acc.seq})
}

// userChange is which change of a user a reqUser makes.
type userChange uint8

const (
	userCreate userChange = iota + 1
	userPassword
	userGrants
	userDelete
)

// onUserChanged notes what an answer says of the user, and schedules the next change:
// at once while the setup is not over, else after UserGapNs.
func (u *run) onUserChanged(req request, resp node.Response) {
	var su *simUser
	for _, x := range u.acc.users {
		if x.name == req.topic {
			su = x
		}
	}
	switch {
	case resp.Err == nil:
		u.stats.UserChanges++
		u.advanceUser(su, req.change)
		switch req.change {
		case userCreate:
			su.exists, su.made, su.revoked = true, true, false
		case userPassword:
			su.previous, su.password, su.pending = su.password, su.pending, ""
		case userGrants:
			su.revoked = !su.revoked
		case userDelete:
			su.exists = false
		}
	case errors.Is(resp.Err, node.ErrUserExists):
		su.exists, su.made = true, true
		u.advanceUser(su, userCreate)
	case errors.Is(resp.Err, node.ErrUserNotFound):
		su.exists = false
	}
	u.scheduleUserStep(resp.Err != nil)
}

// advanceUser moves the admin's round robin to the next user once a change of su that
// leaves it whole has landed: a create, a new password or restored grants. A revocation
// or a delete is undone by the next change of the same user, retried until it lands (an
// unanswered change may or may not be done), so that one user at a time is cut off, for
// about one gap.
func (u *run) advanceUser(su *simUser, change userChange) {
	if u.acc.users[u.acc.next%len(u.acc.users)] != su {
		return // an answer to a change sent before a timeout moved on
	}
	if change == userDelete || (change == userGrants && !su.revoked) {
		return
	}
	u.acc.next++
}

// scheduleUserStep: the next change soon while some user was never made or the current
// one is cut off (after a client's error backoff if failed), else after UserGapNs.
func (u *run) scheduleUserStep(failed bool) {
	cur := u.acc.users[u.acc.next%len(u.acc.users)]
	soon := !cur.exists || cur.revoked
	for _, su := range u.acc.users {
		soon = soon || !su.made
	}
	switch {
	case soon && failed:
		u.atUserStep(u.think() + errorBackoffNs)
	case soon:
		u.atUserStep(u.think())
	default:
		u.atUserStep(u.after(u.o.UserGapNs))
	}
}

// simHasher makes hashes of bcrypt's shape ("$2a$04$", 22 characters of salt, 31 of
// digest: what meta.ValidHash takes) from SHA-256, cheaply and deterministically: the
// simulator's stand-in for bcrypt, which is slow on purpose and salts from crypto/rand.
type simHasher struct{ salts *uint64 }

func (h simHasher) Hash(password string) (string, error) {
	*h.salts++
	salt := fmt.Sprintf("%022d", *h.salts)
	return "$2a$04$" + salt + simDigest(salt, password), nil
}

func (simHasher) Compare(hash, password string) bool {
	return len(hash) == meta.HashBytes && hash[29:] == simDigest(hash[7:29], password)
}

func simDigest(salt, password string) string {
	d := sha256.Sum256([]byte(salt + "\x00" + password))
	return hex.EncodeToString(d[:])[:meta.HashBytes-29]
}
