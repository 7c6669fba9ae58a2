package auth

import (
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

// Identity is who a request is: the user as the replica held it when it was verified,
// with the topics it created (their owner holds every topic action on them).
type Identity struct {
	Name   string
	Grants []access.Grant
	Root   bool
	owners map[string]string // topic -> creator, as of the same replica state
}

// Allows reports whether the identity may do action on topic: a grant covers it, or the
// identity created the topic (any action but Admin).
func (id Identity) Allows(action access.Action, topic string) bool {
	return access.Allows(id.Grants, action, topic) || (action != access.Admin && id.Owns(topic))
}

// Sees reports whether the identity may see topic in a listing: a grant of any action
// covers it, or the identity created it.
func (id Identity) Sees(topic string) bool { return access.Sees(id.Grants, topic) || id.Owns(topic) }

// Owns reports whether the identity created topic.
func (id Identity) Owns(topic string) bool { return id.owners[topic] == id.Name && id.Name != "" }

type cached struct {
	hash string   // the user's hash the password was verified against
	mac  [32]byte // SHA-256 of Authenticator.key and the password (mac)
}

// Hasher makes and checks password hashes: bcrypt at Cost on a node (Bcrypt); the cluster
// simulator passes a cheap deterministic one of the same shape.
type Hasher interface {
	Hash(password string) (string, error)
	Compare(hash, password string) bool
}

// Bcrypt is the hasher of a node: bcrypt at Cost.
type Bcrypt struct{}

// Hash returns the bcrypt hash of password at Cost.
func (Bcrypt) Hash(password string) (string, error) {
	h, err := bcrypt.GenerateFromPassword([]byte(password), Cost)
	return string(h), err
}

// Compare reports whether password matches the bcrypt hash.
func (Bcrypt) Compare(hash, password string) bool {
	return bcrypt.CompareHashAndPassword([]byte(hash), []byte(password)) == nil
}

// Config is what an Authenticator depends on; New uses the zero value.
type Config struct {
	Hasher Hasher           // nil: Bcrypt
	Key    *[32]byte        // the cache's secret key; nil: drawn from crypto/rand
	Now    func() time.Time // the throttle's clock; nil: time.Now
}

// Authenticator checks credentials. The zero value is not usable: use New.
type Authenticator struct {
	users  atomic.Pointer[map[string]meta.User]
	owners atomic.Pointer[map[string]string]
	key    [32]byte
	hasher Hasher
	dummy  string // a hash checked for unknown usernames, so that they cost what a user does

	mu       sync.Mutex
	cache    map[string]cached
	inflight map[checkKey]*check // bcrypt checks running, shared by the requests that wait for them
	throttle *access.Throttle
	now      func() time.Time
	// For tests: checks counts the bcrypt checks of known users run, joined the requests
	// that waited for one, and onCheck runs before each check's bcrypt.
	checks, joined atomic.Int64
	onCheck        func()
}

// checkKey names one bcrypt check: a password (its mac) against a user's hash.
type checkKey struct {
	name, hash string
	mac        [32]byte
}

// check is a bcrypt check in progress; done is closed once ok is set.
type check struct {
	done chan struct{}
	ok   bool
}

// New returns an Authenticator of a node: bcrypt, a random key, no users and the default
// throttle.
func New() *Authenticator { return NewWith(Config{}) }

// NewWith returns an Authenticator with no users and the default throttle, as c says.
func NewWith(c Config) *Authenticator {
	a := &Authenticator{cache: map[string]cached{}, inflight: map[checkKey]*check{}, throttle: access.NewThrottle(access.DefaultThrottleConfig()),
		now: c.Now, hasher: c.Hasher}
	if a.now == nil {
		a.now = time.Now
	}
	if a.hasher == nil {
		a.hasher = Bcrypt{}
	}
	if c.Key != nil {
		a.key = *c.Key
	} else if _, err := rand.Read(a.key[:]); err != nil {
		panic("auth: no randomness for the cache key: " + err.Error())
	}
	dummy, err := a.hasher.Hash(string(a.key[:16]))
	if err != nil {
		panic("auth: hashing the dummy password: " + err.Error())
	}
	a.dummy = dummy
	empty := map[string]meta.User{}
	a.users.Store(&empty)
	none := map[string]string{}
	a.owners.Store(&none)
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

// SetOwners replaces the topics' creators (name -> user) identities are given.
func (a *Authenticator) SetOwners(owners map[string]string) { a.owners.Store(&owners) }

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
		return a.identity(u), nil // a verified credential: no throttle, no bcrypt
	}
	if !known {
		if !a.allow(name, false) {
			return Identity{}, ErrThrottled
		}
		_ = a.hasher.Compare(a.dummy, password) // costs what a user's check does
		a.record(name, false, false, "", mac)
		return Identity{}, ErrNoCredentials
	}
	ok, err := a.verify(checkKey{name: name, hash: u.Hash, mac: mac}, password)
	if err != nil {
		return Identity{}, err
	}
	if !ok {
		return Identity{}, ErrNoCredentials
	}
	return a.identity(u), nil
}

// verify runs the bcrypt check of k, or waits for the one already running: when many
// requests with the same credentials arrive at once (a client pool after a restart, with
// the cache empty), one bcrypt serves them all instead of one each.
func (a *Authenticator) verify(k checkKey, password string) (bool, error) {
	a.mu.Lock()
	if c, ok := a.inflight[k]; ok {
		a.joined.Add(1)
		a.mu.Unlock()
		<-c.done
		return c.ok, nil
	}
	if !a.throttle.Allow(a.now().UnixNano(), k.name, true) {
		a.mu.Unlock()
		return false, ErrThrottled
	}
	c := &check{done: make(chan struct{})}
	a.inflight[k] = c
	a.mu.Unlock()
	a.checks.Add(1)
	if a.onCheck != nil {
		a.onCheck()
	}
	c.ok = a.hasher.Compare(k.hash, password)
	a.record(k.name, true, c.ok, k.hash, k.mac)
	a.mu.Lock()
	delete(a.inflight, k)
	a.mu.Unlock()
	close(c.done)
	return c.ok, nil
}

func (a *Authenticator) identity(u meta.User) Identity {
	return Identity{Name: u.Name, Grants: u.Grants, Root: u.Root, owners: *a.owners.Load()}
}

// mac is SHA-256 over the node's secret key and the password. It runs on every request,
// so a password of a user's length is hashed from a stack buffer, without the
// allocations of an HMAC: the key is secret and of fixed length, and the digest is only
// compared for equality. A longer password (no user has one) is hashed whole all the same.
func (a *Authenticator) mac(password string) [32]byte {
	var buf [len(a.key) + access.PasswordBytesMax]byte
	if len(password) > access.PasswordBytesMax {
		return sha256.Sum256(append(a.key[:], password...))
	}
	n := copy(buf[:], a.key[:])
	n += copy(buf[n:], password)
	return sha256.Sum256(buf[:n])
}

func (a *Authenticator) cachedMatch(name, hash string, mac [32]byte) bool {
	a.mu.Lock()
	c, ok := a.cache[name]
	a.mu.Unlock()
	return ok && (c.hash == hash || mutCacheStale) && subtle.ConstantTimeCompare(c.mac[:], mac[:]) == 1
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
	return Bcrypt{}.Hash(password)
}
