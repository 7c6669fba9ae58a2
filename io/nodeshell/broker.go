package nodeshell

import (
	"context"
	"errors"

	"github.com/narad/narad/core/access"
	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/core/node"
)

// The methods of the HTTP layer's Broker. Each submits one request to the core and waits
// for its response.

// Produce appends msgs to the WAL and returns once all are durable.
func (s *Shell) Produce(ctx context.Context, topic string, msgs []node.ProduceMessage) (int, error) {
	r, err := s.call(ctx, false, func(now int64, tok uint64) { s.node.Produce(now, tok, topic, msgs) })
	if err != nil {
		return 0, err
	}
	return r.Accepted, r.Err
}

// ProduceSync commits msgs at their partitions' owners, this node or peers, and returns
// once every commit is durable and verified (node.ProduceSync): the synchronous internal
// path for producers in this process. It skips the WAL, so a dead owner's partitions are
// walked past; the HTTP API's produce is Produce.
func (s *Shell) ProduceSync(ctx context.Context, topic string, msgs []node.ProduceMessage) (int, error) {
	r, err := s.call(ctx, false, func(now int64, tok uint64) { s.node.ProduceSync(now, tok, topic, msgs) })
	if err != nil {
		return 0, err
	}
	return r.Accepted, r.Err
}

// Consume takes leases (or replays an offset), long-polling up to req.WaitNs.
func (s *Shell) Consume(ctx context.Context, req node.ConsumeRequest) ([]node.Message, error) {
	r, err := s.call(ctx, true, func(now int64, tok uint64) { s.node.Consume(now, tok, req) })
	if err != nil {
		return nil, err
	}
	return r.Messages, r.Err
}

// Ack settles, extends or releases leases: one result per handle.
func (s *Shell) Ack(ctx context.Context, actor, topic string, handles []string, mode node.AckMode) ([]error, error) {
	r, err := s.call(ctx, false, func(now int64, tok uint64) { s.node.AckAs(now, tok, actor, topic, handles, mode) })
	if err != nil {
		return nil, err
	}
	return r.Results, r.Err
}

// CreateTopic creates a topic through the metastore.
func (s *Shell) CreateTopic(ctx context.Context, spec node.TopicSpec) (node.Topic, error) {
	r, err := s.call(ctx, false, func(now int64, tok uint64) { s.node.CreateTopic(now, tok, spec) })
	if err != nil {
		return node.Topic{}, err
	}
	return r.Topic, r.Err
}

// GetTopic returns a topic with its partitions' stats.
func (s *Shell) GetTopic(ctx context.Context, name string) (node.Topic, []node.PartitionStats, error) {
	r, err := s.call(ctx, false, func(now int64, tok uint64) { s.node.GetTopic(now, tok, name) })
	if err != nil {
		return node.Topic{}, nil, err
	}
	return r.Topic, r.Stats, r.Err
}

// ListTopics returns up to limit topics named after after.
func (s *Shell) ListTopics(ctx context.Context, limit int, after string) ([]node.Topic, string, error) {
	r, err := s.call(ctx, false, func(now int64, tok uint64) { s.node.ListTopics(now, tok, limit, after) })
	if err != nil {
		return nil, "", err
	}
	return r.Topics, r.NextPage, r.Err
}

// Members lists the members the node's metastore replica holds.
func (s *Shell) Members(ctx context.Context) ([]node.MemberInfo, error) {
	r, err := s.call(ctx, false, func(now int64, tok uint64) { s.node.ListMembers(now, tok) })
	if err != nil {
		return nil, err
	}
	return r.Members, r.Err
}

// ForgetMember gives up a dead member, or with dryRun says what that would give up.
func (s *Shell) ForgetMember(ctx context.Context, id uint64, dryRun bool) (node.ForgetReport, error) {
	r, err := s.call(ctx, false, func(now int64, tok uint64) { s.node.ForgetMember(now, tok, id, dryRun) })
	if err != nil || r.Err != nil {
		return node.ForgetReport{}, errors.Join(err, r.Err)
	}
	return *r.Forget, nil
}

// DecommissionMember starts draining a member, or with dryRun says whether it would.
func (s *Shell) DecommissionMember(ctx context.Context, id uint64, dryRun bool) (node.DecommissionReport, error) {
	r, err := s.call(ctx, false, func(now int64, tok uint64) { s.node.DecommissionMember(now, tok, id, dryRun) })
	if err != nil || r.Err != nil {
		return node.DecommissionReport{}, errors.Join(err, r.Err)
	}
	return *r.Decommission, nil
}

// Moves lists the partition moves in progress.
func (s *Shell) Moves(ctx context.Context) ([]node.MoveInfo, error) {
	r, err := s.call(ctx, false, func(now int64, tok uint64) { s.node.ListMoves(now, tok) })
	return r.Moves, errors.Join(err, r.Err)
}

// MovePartition starts moving a partition to member to.
func (s *Shell) MovePartition(ctx context.Context, topic string, part uint32, to uint64) error {
	r, err := s.call(ctx, false, func(now int64, tok uint64) { s.node.MovePartition(now, tok, topic, part, to) })
	return errors.Join(err, r.Err)
}

// Rebalance asks the metastore leader to even out the partitions.
func (s *Shell) Rebalance(ctx context.Context) error {
	r, err := s.call(ctx, false, func(now int64, tok uint64) { s.node.Rebalance(now, tok) })
	return errors.Join(err, r.Err)
}

// AbortMove ends a partition's move before its cutover.
func (s *Shell) AbortMove(ctx context.Context, topic string, part uint32) error {
	r, err := s.call(ctx, false, func(now int64, tok uint64) { s.node.AbortMove(now, tok, topic, part) })
	return errors.Join(err, r.Err)
}

// CancelDecommission stops a member's drain.
func (s *Shell) CancelDecommission(ctx context.Context, id uint64) error {
	r, err := s.call(ctx, false, func(now int64, tok uint64) { s.node.CancelDecommission(now, tok, id) })
	return errors.Join(err, r.Err)
}

// PatchTopic changes a topic through the metastore.
func (s *Shell) PatchTopic(ctx context.Context, name string, p node.TopicPatch) (node.Topic, error) {
	r, err := s.call(ctx, false, func(now int64, tok uint64) { s.node.PatchTopic(now, tok, name, p) })
	if err != nil {
		return node.Topic{}, err
	}
	return r.Topic, r.Err
}

// DeleteTopic deletes a topic through the metastore.
func (s *Shell) DeleteTopic(ctx context.Context, actor, name string) error {
	r, err := s.call(ctx, false, func(now int64, tok uint64) { s.node.DeleteTopicAs(now, tok, actor, name) })
	if err != nil {
		return err
	}
	return r.Err
}

// Ready is nil when the node serves requests and its metastore replica has caught up
// with the leader since the start (API.md /readyz), else the reason.
func (s *Shell) Ready() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return node.ErrShuttingDown
	}
	return s.node.Readiness()
}

// CreateUser adds a user through the metastore; hash is the password's bcrypt hash.
func (s *Shell) CreateUser(ctx context.Context, actor, name, hash string, grants []access.Grant) (node.User, error) {
	r, err := s.call(ctx, false, func(now int64, tok uint64) { s.node.CreateUser(now, tok, actor, name, hash, grants) })
	if err != nil {
		return node.User{}, err
	}
	return r.User, r.Err
}

// DeleteUser removes a user through the metastore.
func (s *Shell) DeleteUser(ctx context.Context, actor, name string) error {
	r, err := s.call(ctx, false, func(now int64, tok uint64) { s.node.DeleteUser(now, tok, actor, name) })
	if err != nil {
		return err
	}
	return r.Err
}

// SetUserGrants replaces a user's grants through the metastore.
func (s *Shell) SetUserGrants(ctx context.Context, actor, name string, grants []access.Grant) (node.User, error) {
	r, err := s.call(ctx, false, func(now int64, tok uint64) { s.node.SetUserGrants(now, tok, actor, name, grants) })
	if err != nil {
		return node.User{}, err
	}
	return r.User, r.Err
}

// SetUserPassword replaces a user's password hash through the metastore.
func (s *Shell) SetUserPassword(ctx context.Context, actor, name, hash string) error {
	r, err := s.call(ctx, false, func(now int64, tok uint64) { s.node.SetUserPassword(now, tok, actor, name, hash) })
	if err != nil {
		return err
	}
	return r.Err
}

// SetRootHash hands the node the root user's password hash (node.Node.SetRootHash).
func (s *Shell) SetRootHash(hash string) {
	s.step(func(now int64) { s.node.SetRootHash(now, hash) })
}

// WatchUsers calls f with the node's users (hashes included) and the owners of its
// topics (name -> creator, only topics a user created) now and after every step that may
// have changed them (node.UsersVersion), under the shell's lock: f must be quick and must
// not call the shell.
func (s *Shell) WatchUsers(f func([]meta.User, map[string]string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onUsers = f
	s.usersVersion = s.node.UsersVersion()
	f(s.node.Users(), s.node.TopicOwners())
}

// noteUsers passes the users to the watcher when they may have changed. s.mu is held.
func (s *Shell) noteUsers() {
	if s.onUsers == nil || s.node.UsersVersion() == s.usersVersion {
		return
	}
	s.usersVersion = s.node.UsersVersion()
	s.onUsers(s.node.Users(), s.node.TopicOwners())
}

// Users lists the node's users as its replica holds them, without their hashes.
func (s *Shell) Users(ctx context.Context) ([]node.User, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	us := s.node.APIUsers()
	s.mu.Unlock()
	return us, nil
}
