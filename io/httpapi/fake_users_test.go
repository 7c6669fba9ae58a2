package httpapi

import (
	"context"
	"slices"

	"github.com/narad/narad/core/access"
	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/core/node"
	"github.com/narad/narad/io/auth"
)

// fakeUsers is the fake broker's user store: the metastore's rules in brief (exists,
// not found, root and self refused), and an Authenticator it keeps up to date as the
// node shell does.
type fakeUsers struct {
	users  map[string]meta.User
	owners map[string]string // topic -> creator
	auth   *auth.Authenticator
}

// withUsers gives f a user store holding root (password rootPassword) and an
// Authenticator that follows it.
func (f *fakeBroker) withUsers(a *auth.Authenticator, rootPassword string) {
	h, err := auth.Hash(rootPassword)
	if err != nil {
		panic(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.u = &fakeUsers{users: map[string]meta.User{access.RootUsername: {Name: access.RootUsername, Hash: h,
		Grants: []access.Grant{{Action: access.Admin}}, Root: true}}, owners: map[string]string{}, auth: a}
	f.u.publish()
}

func (u *fakeUsers) publish() {
	var us []meta.User
	for _, x := range u.users { //narad:sorted (SetUsers takes any order)
		us = append(us, x)
	}
	u.auth.SetUsers(us)
	owners := map[string]string{}
	for k, v := range u.owners { //narad:sorted (a copy)
		owners[k] = v
	}
	u.auth.SetOwners(owners)
}

func (f *fakeBroker) CreateUser(_ context.Context, actor, name, hash string, grants []access.Grant) (node.User, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("CreateUser", "%s %s %v", actor, name, grants); err != nil {
		return node.User{}, err
	}
	if _, ok := f.u.users[name]; ok {
		return node.User{}, node.ErrUserExists
	}
	if access.IsAdmin(grants) && actor != access.RootUsername {
		return node.User{}, node.ErrForbidden
	}
	f.u.users[name] = meta.User{Name: name, Hash: hash, Grants: grants}
	f.u.publish()
	return apiUserOf(f.u.users[name]), nil
}

func (f *fakeBroker) DeleteUser(_ context.Context, actor, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("DeleteUser", "%s %s", actor, name); err != nil {
		return err
	}
	u, ok := f.u.users[name]
	switch {
	case !ok:
		return node.ErrUserNotFound
	case u.Root || actor == name:
		return node.ErrForbidden
	}
	delete(f.u.users, name)
	f.u.publish()
	return nil
}

func (f *fakeBroker) SetUserGrants(_ context.Context, actor, name string, grants []access.Grant) (node.User, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("SetUserGrants", "%s %s %v", actor, name, grants); err != nil {
		return node.User{}, err
	}
	u, ok := f.u.users[name]
	switch {
	case !ok:
		return node.User{}, node.ErrUserNotFound
	case u.Root || actor == name:
		return node.User{}, node.ErrForbidden
	}
	u.Grants = grants
	f.u.users[name] = u
	f.u.publish()
	return apiUserOf(u), nil
}

func (f *fakeBroker) SetUserPassword(_ context.Context, actor, name, hash string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("SetUserPassword", "%s %s", actor, name); err != nil {
		return err
	}
	u, ok := f.u.users[name]
	if !ok {
		return node.ErrUserNotFound
	}
	u.Hash = hash
	f.u.users[name] = u
	f.u.publish()
	return nil
}

func (f *fakeBroker) Users(context.Context) ([]node.User, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []node.User
	if f.u == nil {
		return out, nil
	}
	for _, u := range f.u.users { //narad:sorted
		out = append(out, apiUserOf(u))
	}
	slices.SortFunc(out, func(a, b node.User) int {
		if a.Name < b.Name {
			return -1
		}
		return 1
	})
	return out, nil
}

func apiUserOf(u meta.User) node.User {
	return node.User{Name: u.Name, Grants: u.Grants, Root: u.Root, CreatedAtMs: u.CreatedAtMs, UpdatedAtMs: u.UpdatedAtMs}
}
