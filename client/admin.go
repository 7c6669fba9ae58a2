package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// topicsPageMax is the page size ListTopics asks for (the server's largest).
const topicsPageMax = 1000

// topicsPagesMax bounds the pages ListTopics follows.
const topicsPagesMax = 10_000

// CreateTopic creates a topic (201). ErrConflict: it exists (also after a retried attempt
// that had created it: a 503 of a topic write may come after the write was proposed).
func (c *Client) CreateTopic(ctx context.Context, cfg TopicConfig) (Topic, error) {
	var t Topic
	err := c.sendJSON(ctx, http.MethodPost, "/v1/topics", nil, cfg, &t)
	return t, err
}

// ListTopics lists the topics the caller may see, every page.
func (c *Client) ListTopics(ctx context.Context) ([]Topic, error) {
	var all []Topic
	token := ""
	for range topicsPagesMax {
		q := url.Values{"limit": {strconv.Itoa(topicsPageMax)}}
		if token != "" {
			q.Set("page_token", token)
		}
		var page struct {
			Topics        []Topic `json:"topics"`
			NextPageToken string  `json:"next_page_token"`
		}
		if err := c.getJSON(ctx, "/v1/topics", q, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Topics...)
		if token = page.NextPageToken; token == "" {
			break
		}
	}
	return all, nil
}

// GetTopic reads a topic with its partition statistics.
func (c *Client) GetTopic(ctx context.Context, name string) (Topic, error) {
	var t Topic
	err := c.getJSON(ctx, pathOf("/v1/topics", name), nil, &t)
	return t, err
}

// PatchTopic changes a topic's settings (partitions only grow).
func (c *Client) PatchTopic(ctx context.Context, name string, p TopicPatch) (Topic, error) {
	var t Topic
	err := c.sendJSON(ctx, http.MethodPatch, pathOf("/v1/topics", name), nil, p, &t)
	return t, err
}

// DeleteTopic deletes a topic and its records. A retried attempt may answer ErrNotFound
// when an earlier one had deleted it.
func (c *Client) DeleteTopic(ctx context.Context, name string) error {
	return c.sendJSON(ctx, http.MethodDelete, pathOf("/v1/topics", name), nil, nil, nil)
}

// CreateUser makes a user (admin). ErrConflict: the name exists.
func (c *Client) CreateUser(ctx context.Context, username, password string, grants []Grant) (User, error) {
	if grants == nil {
		grants = []Grant{}
	}
	body := struct {
		Username string  `json:"username"`
		Password string  `json:"password"`
		Grants   []Grant `json:"grants"`
	}{username, password, grants}
	var u User
	err := c.sendJSON(ctx, http.MethodPost, "/v1/users", nil, body, &u)
	return u, err
}

// ListUsers lists the users (admin).
func (c *Client) ListUsers(ctx context.Context) ([]User, error) {
	var out struct {
		Users []User `json:"users"`
	}
	err := c.getJSON(ctx, "/v1/users", nil, &out)
	return out.Users, err
}

// GetUser reads a user (an admin, or the user himself).
func (c *Client) GetUser(ctx context.Context, username string) (User, error) {
	var u User
	err := c.getJSON(ctx, pathOf("/v1/users", username), nil, &u)
	return u, err
}

// DeleteUser deletes a user (admin; not the root user, not oneself).
func (c *Client) DeleteUser(ctx context.Context, username string) error {
	return c.sendJSON(ctx, http.MethodDelete, pathOf("/v1/users", username), nil, nil, nil)
}

// SetGrants replaces a user's grants (admin; not the root user's, not one's own).
func (c *Client) SetGrants(ctx context.Context, username string, grants []Grant) (User, error) {
	if grants == nil {
		grants = []Grant{}
	}
	body := struct {
		Grants []Grant `json:"grants"`
	}{grants}
	var u User
	err := c.sendJSON(ctx, http.MethodPut, pathOf("/v1/users", username, "grants"), nil, body, &u)
	return u, err
}

// SetPassword changes a user's password: an admin for another user (current ""), a user
// for himself with his current password.
func (c *Client) SetPassword(ctx context.Context, username, newPassword, current string) error {
	body := struct {
		New     string  `json:"new_password"`
		Current *string `json:"current_password,omitempty"`
	}{New: newPassword}
	if current != "" {
		body.Current = &current
	}
	return c.sendJSON(ctx, http.MethodPut, pathOf("/v1/users", username, "password"), nil, body, nil)
}

// Members lists the cluster's members (admin).
func (c *Client) Members(ctx context.Context) ([]Member, error) {
	var out struct {
		Members []Member `json:"members"`
	}
	err := c.getJSON(ctx, "/v1/cluster/members", nil, &out)
	return out.Members, err
}

// Moves lists the partition moves in progress (admin).
func (c *Client) Moves(ctx context.Context) ([]Move, error) {
	var out struct {
		Moves []Move `json:"moves"`
	}
	err := c.getJSON(ctx, "/v1/cluster/moves", nil, &out)
	return out.Moves, err
}

// StartMove moves a partition to member to (admin; 202).
func (c *Client) StartMove(ctx context.Context, topic string, partition uint32, to uint64) error {
	body := struct {
		Topic     string `json:"topic"`
		Partition uint32 `json:"partition"`
		To        uint64 `json:"to"`
	}{topic, partition, to}
	return c.sendJSON(ctx, http.MethodPost, "/v1/cluster/moves", nil, body, nil)
}

// AbortMove ends a move before its cutover; the source keeps the partition (admin).
func (c *Client) AbortMove(ctx context.Context, topic string, partition uint32) error {
	p := pathOf("/v1/cluster/moves", topic, strconv.FormatUint(uint64(partition), 10), "abort")
	return c.sendJSON(ctx, http.MethodPost, p, nil, nil, nil)
}

// Decommission drains member id and removes it from the cluster (admin), or on a dry
// run answers whether it would go. ErrConflict names the guard that refuses it.
func (c *Client) Decommission(ctx context.Context, id uint64, dryRun bool) (Decommission, error) {
	var out Decommission
	q := url.Values{"dry_run": {strconv.FormatBool(dryRun)}}
	err := c.sendJSON(ctx, http.MethodPost, memberPath(id, "decommission"), q, nil, &out)
	return out, err
}

// CancelDecommission stops a drain that has not finished (admin). ErrConflict: not
// draining.
func (c *Client) CancelDecommission(ctx context.Context, id uint64) error {
	return c.sendJSON(ctx, http.MethodDelete, memberPath(id, "decommission"), nil, nil, nil)
}

// Forget gives up a dead member for good, or on a dry run lists what that gives up
// (admin). ErrConflict: it is alive, forgotten already, or a guard refuses.
func (c *Client) Forget(ctx context.Context, id uint64, dryRun bool) (Forget, error) {
	var out Forget
	q := url.Values{"dry_run": {strconv.FormatBool(dryRun)}}
	err := c.sendJSON(ctx, http.MethodPost, memberPath(id, "forget"), q, nil, &out)
	return out, err
}

// Rebalance asks the metastore leader to even out the partitions over the members
// (admin; 202).
func (c *Client) Rebalance(ctx context.Context) error {
	return c.sendJSON(ctx, http.MethodPost, "/v1/cluster/rebalance", nil, nil, nil)
}

// Ready reports whether one node answers /readyz 200 (open: no credentials needed).
func (c *Client) Ready(ctx context.Context) error {
	_, err := c.do(ctx, call{method: http.MethodGet, path: "/readyz"})
	return err
}

func memberPath(id uint64, action string) string {
	return pathOf("/v1/cluster/members", strconv.FormatUint(id, 10), action)
}
