package node

import (
	"github.com/narad/narad/core/access"
	"github.com/narad/narad/core/meta"
)

// Users live in the metastore (core/meta/users.go). Their writes go through it like topic
// writes (forwarded to the leader from a follower, answered once the local replica
// applied them); reads serve the local replica. The node never sees a password: the shell
// hashes it (bcrypt) before it asks, and checks a login against Users' hashes itself.

// User is a user as the API shows it: never its hash.
type User struct {
	Name        string
	Grants      []access.Grant
	Root        bool
	CreatedAtMs int64
	UpdatedAtMs int64
}

// RootRetryNs is how often a leader whose replica has no root user proposes it again
// (Config.RootHash) while none has applied.
const RootRetryNs = 1_000_000_000

// CreateUser adds a user with a password hash and grants, as actor asks
// (meta.SystemActor when the node's security is off).
func (n *Node) CreateUser(
	nowNs int64,
	token uint64,
	actor, name, hash string,
	grants []access.Grant,
) {
	n.propose(
		nowNs,
		token,
		meta.Command{Kind: meta.CreateUser, Actor: actor, Username: name, Hash: hash, Grants: grants},
	)
}

// DeleteUser removes a user.
func (n *Node) DeleteUser(nowNs int64, token uint64, actor, name string) {
	n.propose(nowNs, token, meta.Command{Kind: meta.DeleteUser, Actor: actor, Username: name})
}

// SetUserGrants replaces a user's grants.
func (n *Node) SetUserGrants(nowNs int64, token uint64, actor, name string, grants []access.Grant) {
	n.propose(
		nowNs,
		token,
		meta.Command{Kind: meta.SetUserGrants, Actor: actor, Username: name, Grants: grants},
	)
}

// SetUserPassword replaces a user's password hash (the shell checked the current
// password when the user changes his own).
func (n *Node) SetUserPassword(nowNs int64, token uint64, actor, name, hash string) {
	n.propose(
		nowNs,
		token,
		meta.Command{Kind: meta.SetUserPassword, Actor: actor, Username: name, Hash: hash},
	)
}

// Users returns the local replica's users, hashes included, sorted by name: what the
// shell authenticates against. UsersVersion tells when to read them again.
func (n *Node) Users() []meta.User { return n.meta.Users() }

// UsersVersion changes whenever the local replica's users may have changed: it is the
// replica's applied index (users change only by an applied entry or an installed
// snapshot, and both move it). A shell keeps its copy of Users while it stays the same.
func (n *Node) UsersVersion() uint64 { return n.meta.AppliedIndex() }

// apiUser is u without its hash.
func apiUser(u meta.User) User {
	return User{
		Name:        u.Name,
		Grants:      u.Grants,
		Root:        u.Root,
		CreatedAtMs: u.CreatedAtMs,
		UpdatedAtMs: u.UpdatedAtMs,
	}
}

// bootstrapRoot proposes the root user while this node leads the metastore, its replica
// has none, and the shell gave a hash (Config.RootHash): the first start of a new
// cluster. Any leader may do it; the metastore keeps the first that applies.
func (n *Node) bootstrapRoot(nowNs int64) {
	if n.cfg.RootHash == "" || !n.metaReady || nowNs < n.rootRetryAtNs ||
		n.meta.LeaderID() != n.meta.ID() {
		return
	}
	if u, ok := n.meta.User(access.RootUsername); ok && u.Root {
		return
	}
	n.rootRetryAtNs = nowNs + RootRetryNs
	n.meta.Propose(
		nowNs,
		0,
		meta.Command{Kind: meta.CreateRoot, Hash: n.cfg.RootHash},
	) // token 0: no answer
}

// SetRootHash sets Config.RootHash after the start: the shell may hash the root password
// while the node recovers (bcrypt is slow on purpose). An empty hash or a second call
// changes nothing.
func (n *Node) SetRootHash(nowNs int64, hash string) {
	defer n.collect(nowNs)
	if hash == "" || n.cfg.RootHash != "" {
		return
	}
	n.cfg.RootHash = hash
	n.bootstrapRoot(nowNs)
}

// rootDeadline is when bootstrapRoot should look again.
func (n *Node) rootDeadline() (int64, bool) {
	if n.cfg.RootHash == "" || !n.metaReady || n.rootRetryAtNs == 0 {
		return 0, false
	}
	if u, ok := n.meta.User(access.RootUsername); ok && u.Root {
		return 0, false
	}
	return n.rootRetryAtNs, true
}

// APIUsers returns the local replica's users as the API shows them (no hashes), sorted
// by name.
func (n *Node) APIUsers() []User {
	us := n.meta.Users()
	out := make([]User, len(us))
	for i, u := range us {
		out[i] = apiUser(u)
	}
	return out
}

// checkActor checks, on the owner, the consume grant of the user a routed consume or ack
// was made for, against this node's replica: the node that took the request checked it
// against its own, which may be behind (a grant revoked there not yet applied, or here).
// A request made for no user is the system's (a node with security off, or a release of
// leases for an answer already given); the peer transport authenticated its sender.
func (n *Node) checkActor(actor string, t meta.Topic) error {
	if actor == meta.SystemActor || actor == t.Owner || mutOwnerNoCheck {
		return nil // the system, or the topic's creator (meta.Topic.Owner)
	}
	if u, ok := n.meta.User(actor); ok && access.Allows(u.Grants, access.Consume, t.Name) {
		return nil
	}
	return ErrForbidden
}

// TopicOwners maps the name of every topic a user created to that user (meta.Topic.Owner).
func (n *Node) TopicOwners() map[string]string {
	out := map[string]string{}
	for _, t := range n.meta.Topics() {
		if t.Owner != "" {
			out[t.Name] = t.Owner
		}
	}
	return out
}
