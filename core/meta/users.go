package meta

import (
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/narad/narad/core/access"
)

// User is one user as the metastore holds it (issue 12; API.md, "Access"). Hash is the
// bcrypt hash of the password, computed by the proposing node's shell: it never goes into
// JSON from this type (the snapshot codes it apart), so that no answer carries it.
type User struct {
	Name        string         `json:"username"`
	Hash        string         `json:"-"`
	Grants      []access.Grant `json:"grants"`
	Root        bool           `json:"root"`
	CreatedAtMs int64          `json:"created_at_ms"` // the proposer's clock, Unix ms
	UpdatedAtMs int64          `json:"updated_at_ms"`
}

// User bounds.
const (
	UsersMax = 10_000
	// HashBytes is the length of a bcrypt hash ($2a$, $2b$ or $2y$, cost, salt, digest).
	HashBytes = 60
)

// Errors of the user commands.
var (
	ErrForbidden    = errors.New("meta: forbidden")      // 403: the actor may not do this
	ErrUserExists   = errors.New("meta: user exists")    // 409
	ErrUserNotFound = errors.New("meta: user not found") // 404
)

// SystemActor is the actor of a command the node makes itself (the root user's creation,
// and every user command of a node whose security is off, narad serve -dev): it may do
// anything. With security on the node layer sets Actor to the username it verified.
const SystemActor = ""

// ValidHash reports whether h looks like a bcrypt hash: the core never checks a password,
// but it refuses to store what is plainly not a hash (a password, by mistake).
func ValidHash(h string) bool {
	return len(h) == HashBytes &&
		(strings.HasPrefix(h, "$2a$") || strings.HasPrefix(h, "$2b$") || strings.HasPrefix(h, "$2y$"))
}

func isUserKind(k CommandKind) bool { return k >= CreateUser && k <= CreateRoot }

// normalizeUser checks a user command without looking at the users and merges its grants.
func (c Command) normalizeUser() (Command, error) {
	if c.Name != "" || c.Member != 0 || c.Addr != "" || c.Alive || c.anySetting() {
		return c, invalid("a user command takes no topic or member fields")
	}
	if c.Kind == CreateRoot {
		c.Username, c.Actor = access.RootUsername, SystemActor
	}
	if !access.ValidUsername(c.Username) {
		return c, invalid("username must be 1-%d characters of [A-Za-z0-9._-]", access.UsernameBytesMax)
	}
	if c.Actor != SystemActor && !access.ValidUsername(c.Actor) {
		return c, invalid("actor %q is not a username", c.Actor)
	}
	needsHash := c.Kind == CreateUser || c.Kind == SetUserPassword || c.Kind == CreateRoot
	if needsHash != (c.Hash != "") || (needsHash && !ValidHash(c.Hash)) {
		return c, invalid(
			"%s takes a bcrypt hash of %d bytes only where it sets a password",
			c.Kind,
			HashBytes,
		)
	}
	takesGrants := c.Kind == CreateUser || c.Kind == SetUserGrants
	if !takesGrants && len(c.Grants) > 0 {
		return c, invalid("%s takes no grants", c.Kind)
	}
	if takesGrants {
		gs, err := access.Normalize(c.Grants)
		if err != nil {
			return c, invalid("%v", err)
		}
		c.Grants = gs
	}
	return c, nil
}

// checkUser answers a user command against the users as they are, changing nothing: nil,
// or the error the command gets. c must be normalized.
func (m *machine) checkUser(c Command) error {
	target, exists := m.users[c.Username]
	switch c.Kind {
	case CreateRoot:
		if m.hasRoot() || exists {
			return ErrUserExists
		}
		return nil
	case CreateUser:
		if exists {
			return ErrUserExists
		}
		if len(m.users) >= UsersMax {
			return invalid("the cluster has %d users already", UsersMax)
		}
	default:
		if !exists {
			return ErrUserNotFound
		}
	}
	return m.authorize(c, target)
}

// authorize applies the rules of who may change whom: an admin changes other users; the
// root user is never deleted and never loses admin; nobody deletes or re-grants himself;
// only root grants admin; root's password is changed by root alone; any user changes his
// own password (the shell checked the current one).
func (m *machine) authorize(c Command, target User) error {
	if c.Actor == SystemActor {
		return nil
	}
	actor, ok := m.users[c.Actor]
	admin := ok && access.IsAdmin(actor.Grants)
	self := c.Actor == c.Username
	switch c.Kind {
	case SetUserPassword:
		if self || (admin && !target.Root) {
			return nil
		}
		return ErrForbidden
	case CreateUser, SetUserGrants:
		if !admin || self || target.Root || (access.IsAdmin(c.Grants) && !actor.Root) {
			return ErrForbidden
		}
	case DeleteUser:
		if !admin || self || target.Root {
			return ErrForbidden
		}
	}
	return nil
}

// mayCreate reports whether actor may create, patch or delete topic name: the system,
// or a user whose grants cover it (access.Create; admin covers every topic). A topic
// write forwarded to the leader so carries the identity the first node verified, and the
// entry is checked again with the rights of its own index.
func (m *machine) mayCreate(actor, name string) bool {
	if actor == SystemActor {
		return true
	}
	u, ok := m.users[actor]
	return ok && access.Allows(u.Grants, access.Create, name)
}

// disown clears the ownership of a deleted user's topics: a user made later under that
// name must not inherit them.
func (m *machine) disown(name string) {
	for _, tn := range slices.Sorted(maps.Keys(m.byName)) {
		if t := m.byName[tn]; t.Owner == name {
			t.Owner = ""
			m.byName[tn] = t
		}
	}
}

func (m *machine) hasRoot() bool {
	u, ok := m.users[access.RootUsername]
	return ok && u.Root
}

// applyUser applies a checked user command at nowNs (the proposer's clock) and returns the
// user as it is after (as it was, for a delete).
func (m *machine) applyUser(c Command, nowNs int64) User {
	ms := nowNs / 1_000_000
	u := m.users[c.Username]
	switch c.Kind {
	case CreateRoot:
		u = User{
			Name:        c.Username,
			Hash:        c.Hash,
			Grants:      []access.Grant{{Action: access.Admin}},
			Root:        true,
			CreatedAtMs: ms,
			UpdatedAtMs: ms,
		}
	case CreateUser:
		u = User{Name: c.Username, Hash: c.Hash, Grants: c.Grants, CreatedAtMs: ms, UpdatedAtMs: ms}
	case DeleteUser:
		delete(m.users, c.Username)
		m.disown(c.Username)
		return u
	case SetUserGrants:
		u.Grants, u.UpdatedAtMs = c.Grants, ms
	case SetUserPassword:
		u.Hash, u.UpdatedAtMs = c.Hash, ms
	}
	m.users[c.Username] = u
	return u
}

// User returns the user name on the local replica.
func (s *Store) User(name string) (User, bool) {
	u, ok := s.sm.users[name]
	return u, ok
}

// Users returns every user on the local replica, sorted by name.
func (s *Store) Users() []User {
	out := make([]User, 0, len(s.sm.users))
	for _, name := range slices.Sorted(maps.Keys(s.sm.users)) {
		out = append(out, s.sm.users[name])
	}
	return out
}
