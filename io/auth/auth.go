package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/narad/narad/core/access"
	"github.com/narad/narad/core/meta"
)

// Cost is the bcrypt cost of the hashes this node makes.
const Cost = bcrypt.DefaultCost

// CacheMax bounds the verified credentials kept.
const CacheMax = 4096

// The outcomes of Authenticate that are not a user.
var (
	ErrNoCredentials = errors.New("auth: credentials missing or wrong") // 401
	ErrThrottled     = errors.New("auth: too many failed logins")       // 429
)

// Identity is who a request is: the user as the replica held it when it was verified.
type Identity struct {
	Name   string
	Grants []access.Grant
	Root   bool
}

// Allows reports whether the identity may do action on topic.
func (id Identity) Allows(action access.Action, topic string) bool {
	return access.Allows(id.Grants, action, topic)
}

type cached struct {
	hash string   // the user's hash the password was verified against
	mac  [32]byte // HMAC-SHA256 of the password under Authenticator.key
}

// Authenticator checks credentials. The zero value is not usable: use New.
type Authenticator struct {
	users atomic.Pointer[map[string]meta.User]
	key   [32]byte
	dummy []byte // a hash checked for unknown usernames, so that they cost what a user does

	mu       sync.Mutex
	cache    map[string]cached
	throttle *access.Throttle
	now      func() time.Time
}

// New returns an Authenticator with no users and the default throttle.
func New() *Authenticator {
	a := &Authenticator{cache: map[string]cached{}, throttle: access.NewThrottle(access.DefaultThrottleConfig()), now: time.Now}
	if _, err := rand.Read(a.key[:]); err != nil {
		panic("auth: no randomness for the cache key: " + err.Error())
	}
	dummy, err := bcrypt.GenerateFromPassword(a.key[:16], Cost)
	if err != nil {
		panic("auth: bcrypt: " + err.Error())
	}
	a.dummy = dummy
	empty := map[string]meta.User{}
	a.users.Store(&empty)
	return a
}

// SetUsers replaces the users credentials are checked against (the node's replica).
func (a *Authenticator) SetUsers(users []meta.User) {
	m := make(map[string]meta.User, len(users))
	for _, u := range users {
		m[u.Name] = u
	}
	a.users.Store(&m)
}

// User returns the user name as the replica held it at the last SetUsers.
func (a *Authenticator) User(name string) (meta.User, bool) {
	u, ok := (*a.users.Load())[name]
	return u, ok
}

// Users returns every user as of the last SetUsers, in no order.
func (a *Authenticator) Users() map[string]meta.User { return *a.users.Load() }

// Authenticate checks a username and password: the user's identity, ErrNoCredentials or
// ErrThrottled.
func (a *Authenticator) Authenticate(name, password string) (Identity, error) {
	u, known := a.User(name)
	mac := a.mac(password)
	if known && a.cachedMatch(name, u.Hash, mac) {
		return identity(u), nil // a verified credential: no throttle, no bcrypt
	}
	if !a.allow(name, known) {
		return Identity{}, ErrThrottled
	}
	hash := a.dummy
	if known {
		hash = []byte(u.Hash)
	}
	ok := bcrypt.CompareHashAndPassword(hash, []byte(password)) == nil && known
	a.record(name, known, ok, u.Hash, mac)
	if !ok {
		return Identity{}, ErrNoCredentials
	}
	return identity(u), nil
}

func identity(u meta.User) Identity { return Identity{Name: u.Name, Grants: u.Grants, Root: u.Root} }

func (a *Authenticator) mac(password string) [32]byte {
	h := hmac.New(sha256.New, a.key[:])
	h.Write([]byte(password))
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

func (a *Authenticator) cachedMatch(name, hash string, mac [32]byte) bool {
	a.mu.Lock()
	c, ok := a.cache[name]
	a.mu.Unlock()
	return ok && c.hash == hash && subtle.ConstantTimeCompare(c.mac[:], mac[:]) == 1
}

func (a *Authenticator) allow(name string, known bool) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.throttle.Allow(a.now().UnixNano(), name, known)
}

// record notes a bcrypt check's outcome: a success is cached and clears the failures, a
// failure spends a try.
func (a *Authenticator) record(name string, known, ok bool, hash string, mac [32]byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !ok {
		a.throttle.Failed(a.now().UnixNano(), name, known)
		return
	}
	a.throttle.Succeeded(name)
	if _, there := a.cache[name]; !there && len(a.cache) >= CacheMax {
		for k := range a.cache { // drop any one: Go's map order is random enough here
			delete(a.cache, k)
			break
		}
	}
	a.cache[name] = cached{hash: hash, mac: mac}
}

// Hash returns the bcrypt hash of a password this node stores for a user.
func Hash(password string) (string, error) {
	if err := access.CheckPassword(password); err != nil {
		return "", err
	}
	h, err := bcrypt.GenerateFromPassword([]byte(password), Cost)
	return string(h), err
}
