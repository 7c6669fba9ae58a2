package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/narad/narad/core/access"
	"github.com/narad/narad/core/node"
	"github.com/narad/narad/io/auth"
)

// The users API (API.md, "Access"): the sub-resources of /v1/users/{name}.
const (
	subUser = iota
	subUserGrants
	subUserPassword
)

// userBodyBytesMax bounds a users request body.
const userBodyBytesMax = 64 << 10

var (
	errBadUsername = &apiError{status: http.StatusBadRequest, msg: "invalid username: 1 to 64 characters of [A-Za-z0-9._-]"}
	errBadPassword = &apiError{status: http.StatusBadRequest, msg: "a password is 8 to 72 bytes"}
	errNotSelf     = &apiError{status: http.StatusForbidden, msg: "forbidden: only an admin reads or changes another user"}
	errCurrentPass = &apiError{status: http.StatusForbidden, msg: "forbidden: current_password is missing or wrong"}
)

// UserBroker is the part of the Broker that writes users (through the metastore) and
// reads them (the node's replica). actor is the caller's username, or meta.SystemActor
// with security off; hash is a password's bcrypt hash (auth.Hash): no password reaches
// the broker.
type UserBroker interface {
	CreateUser(ctx context.Context, actor, name, hash string, grants []access.Grant) (node.User, error)
	DeleteUser(ctx context.Context, actor, name string) error
	SetUserGrants(ctx context.Context, actor, name string, grants []access.Grant) (node.User, error)
	SetUserPassword(ctx context.Context, actor, name, hash string) error
	// Users lists the replica's users, sorted by name.
	Users(ctx context.Context) ([]node.User, error)
}

// matchUser finds the users pattern of rest (the path after /v1/users/) and the name.
func (s *Server) matchUser(rest string) (*pattern, string) {
	name, sub, hasSub := strings.Cut(rest, "/")
	switch {
	case name == "":
		return nil, ""
	case !hasSub:
		return s.userPats[subUser], name
	case sub == "grants":
		return s.userPats[subUserGrants], name
	case sub == "password":
		return s.userPats[subUserPassword], name
	}
	return nil, ""
}

type userJSON struct {
	Username    string         `json:"username"`
	Grants      []access.Grant `json:"grants"`
	Root        bool           `json:"root"`
	CreatedAtMs int64          `json:"created_at_ms"`
	UpdatedAtMs int64          `json:"updated_at_ms"`
}

func encodeUser(u node.User) userJSON {
	gs := u.Grants
	if gs == nil {
		gs = []access.Grant{}
	}
	return userJSON{Username: u.Name, Grants: gs, Root: u.Root, CreatedAtMs: u.CreatedAtMs, UpdatedAtMs: u.UpdatedAtMs}
}

type createUserRequest struct {
	Username string         `json:"username"`
	Password string         `json:"password"`
	Grants   []access.Grant `json:"grants"`
}

// createUser: POST /v1/users (admin) -> 201.
func (s *Server) createUser(w http.ResponseWriter, r *http.Request, _ string) (int, error) {
	var req createUserRequest
	if err := decodeStrict(w, r, userBodyBytesMax, &req); err != nil {
		return 0, err
	}
	if !access.ValidUsername(req.Username) {
		return 0, errBadUsername
	}
	grants, err := access.Normalize(req.Grants)
	if err != nil {
		return 0, badRequest("%v", err)
	}
	hash, err := hashPassword(req.Password)
	if err != nil {
		return 0, err
	}
	u, err := s.b.CreateUser(r.Context(), actor(r), req.Username, hash, grants)
	if err != nil {
		return 0, err
	}
	w.Header().Set("Location", "/v1/users/"+u.Name)
	return writeJSON(w, http.StatusCreated, encodeUser(u))
}

// listUsers: GET /v1/users (admin).
func (s *Server) listUsers(w http.ResponseWriter, r *http.Request, _ string) (int, error) {
	us, err := s.b.Users(r.Context())
	if err != nil {
		return 0, err
	}
	out := struct {
		Users []userJSON `json:"users"`
	}{Users: make([]userJSON, len(us))}
	for i, u := range us {
		out.Users[i] = encodeUser(u)
	}
	return writeJSON(w, http.StatusOK, out)
}

// getUser: GET /v1/users/{name} (admin, or the user himself).
func (s *Server) getUser(w http.ResponseWriter, r *http.Request, name string) (int, error) {
	if !isAdmin(r) && actor(r) != name {
		return 0, errNotSelf
	}
	us, err := s.b.Users(r.Context())
	if err != nil {
		return 0, err
	}
	for _, u := range us {
		if u.Name == name {
			return writeJSON(w, http.StatusOK, encodeUser(u))
		}
	}
	return 0, node.ErrUserNotFound
}

// deleteUser: DELETE /v1/users/{name} (admin; not root, not self) -> 204.
func (s *Server) deleteUser(w http.ResponseWriter, r *http.Request, name string) (int, error) {
	if err := s.b.DeleteUser(r.Context(), actor(r), name); err != nil {
		return 0, err
	}
	w.WriteHeader(http.StatusNoContent)
	return http.StatusNoContent, nil
}

// putGrants: PUT /v1/users/{name}/grants (admin; not root, not self) -> 200.
func (s *Server) putGrants(w http.ResponseWriter, r *http.Request, name string) (int, error) {
	var req struct {
		Grants *[]access.Grant `json:"grants"`
	}
	if err := decodeStrict(w, r, userBodyBytesMax, &req); err != nil {
		return 0, err
	}
	if req.Grants == nil {
		return 0, badRequest("grants is required (an empty list revokes every grant)")
	}
	grants, err := access.Normalize(*req.Grants)
	if err != nil {
		return 0, badRequest("%v", err)
	}
	u, err := s.b.SetUserGrants(r.Context(), actor(r), name, grants)
	if err != nil {
		return 0, err
	}
	return writeJSON(w, http.StatusOK, encodeUser(u))
}

// putPassword: PUT /v1/users/{name}/password (an admin for another user, or the user
// himself with current_password) -> 204.
func (s *Server) putPassword(w http.ResponseWriter, r *http.Request, name string) (int, error) {
	var req struct {
		New     string  `json:"new_password"`
		Current *string `json:"current_password"`
	}
	if err := decodeStrict(w, r, userBodyBytesMax, &req); err != nil {
		return 0, err
	}
	if id, ok := caller(r); ok && id.Name == name {
		if req.Current == nil {
			return 0, errCurrentPass
		}
		if _, err := s.auth.Authenticate(name, *req.Current); err == auth.ErrThrottled {
			return 0, errThrottled
		} else if err != nil {
			return 0, errCurrentPass
		}
	} else if !isAdmin(r) {
		return 0, errNotSelf
	}
	hash, err := hashPassword(req.New)
	if err != nil {
		return 0, err
	}
	if err := s.b.SetUserPassword(r.Context(), actor(r), name, hash); err != nil {
		return 0, err
	}
	w.WriteHeader(http.StatusNoContent)
	return http.StatusNoContent, nil
}

// hashPassword checks a password's length and hashes it.
func hashPassword(password string) (string, error) {
	if access.CheckPassword(password) != nil {
		return "", errBadPassword
	}
	return auth.Hash(password)
}
