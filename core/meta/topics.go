package meta

import (
	"errors"
	"fmt"

	"github.com/narad/narad/core/access"
	"github.com/narad/narad/core/assert"
)

// Topic is one topic as the metastore holds it.
type Topic struct {
	Name string `json:"name"`
	// ID is the incarnation id: the raft index of the entry that created the topic. It is
	// unique and never reused, so a topic deleted and created again under the same name
	// gets a new one.
	ID                      uint64 `json:"id"`
	Partitions              uint32 `json:"partitions"`
	RetentionMs             int64  `json:"retention_ms"` // 0 = keep forever
	VisibilityTimeoutMs     int64  `json:"visibility_timeout_ms"`
	MaxInFlightPerPartition uint32 `json:"max_in_flight_per_partition"`
	CreatedAtMs             int64  `json:"created_at_ms"` // the proposer's clock, Unix ms
	// Owner is the user who created the topic ("" when the system did): the creator owns
	// it, and holds every topic action on it (produce, consume, create) whatever its grants.
	Owner string `json:"owner,omitempty"`
}

// CommandKind names what a Command does.
type CommandKind uint8

// The commands.
const (
	CreateTopic        CommandKind = iota + 1 // fails with ErrExists if the name is taken
	DeleteTopic                               // fails with ErrNotFound
	PatchTopic                                // fails with ErrNotFound; partitions only grow
	JoinMember                                // adds or updates a member (Member, Addr); it is alive
	SetMemberAlive                            // marks a member alive or dead; ErrNoMember
	CreateUser                                // adds a user (Username, Hash, Grants); ErrUserExists
	DeleteUser                                // removes a user (Username); ErrUserNotFound
	SetUserGrants                             // replaces a user's grants (Username, Grants)
	SetUserPassword                           // replaces a user's password hash (Username, Hash)
	CreateRoot                                // adds the root user admin (Hash) unless a root exists
	ForgetMember                              // gives up a dead member (Member): forget.go
	DecommissionMember                        // starts draining a member: decommission.go
	CancelDecommission                        // stops a member's drain; ErrNotDraining
	RemoveMember                              // removes a drained member (its node's)
	StartMove                                 // starts a partition's move: moves.go
	FreezeMove                                // freezes a moving partition at its source
	CutOverMove                               // gives a moved partition to its destination
	AbortMove                                 // ends a move before its cutover
	Rebalance                                 // asks the leader to even out the partitions
	lastKind           = Rebalance
)

var kindNames = [...]string{"", "create", "delete", "patch", "member-join", "member-alive",
	"user-create", "user-delete", "user-grants", "user-password", "user-root", "member-forget",
	"member-decommission", "member-recommission", "member-remove",
	"move-start", "move-freeze", "move-cutover", "move-abort", "rebalance"}

func (k CommandKind) String() string {
	if k >= CreateTopic && k <= lastKind {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Command is a change to the topics, the members or the users. For CreateTopic a nil field
// takes its default; for PatchTopic a nil field is left unchanged; DeleteTopic takes only
// the name; the member commands take Member and Addr or Alive; the user commands take
// Username, Actor (who asks: SystemActor or a username, checked at apply) and Hash or
// Grants (users.go).
type Command struct {
	Kind                    CommandKind
	Name                    string
	Member                  uint64
	Addr                    string
	Alive                   bool
	TopicID                 uint64 // the move commands' topic incarnation (moves.go)
	Part                    uint32 // and partition
	Epoch                   uint32 // and the partition's epoch
	Partitions              *uint32
	RetentionMs             *int64
	VisibilityTimeoutMs     *int64
	MaxInFlightPerPartition *uint32
	Username                string
	Actor                   string
	Hash                    string
	Grants                  []access.Grant
}

// Topic defaults and bounds (API.md, "Topics").
const (
	NameBytesMax                   = 200
	PartitionsMax                  = 1024
	VisibilityTimeoutMsMin         = 1
	VisibilityTimeoutMsMax         = 12 * 3600 * 1000
	MaxInFlightPerPartitionMax     = 65_536
	DefaultPartitions              = 3
	DefaultRetentionMs             = 7 * 24 * 3600 * 1000
	DefaultVisibilityTimeoutMs     = 30_000
	DefaultMaxInFlightPerPartition = 1024
	// TopicsMax bounds the number of topics; a create past it fails with ErrTooManyTopics.
	TopicsMax = 100_000
)

// Errors a command is answered with.
var (
	ErrInvalid       = errors.New("meta: invalid command") // 400
	ErrExists        = errors.New("meta: topic exists")    // 409
	ErrNotFound      = errors.New("meta: topic not found") // 404
	ErrTooManyTopics = errors.New("meta: too many topics") // the store holds TopicsMax
	// ErrNotLeader: propose on the leader; also answered before recovery.
	ErrNotLeader = errors.New("meta: not the leader")
	// ErrBusy: ProposalsMax or BarriersMax reached; retry.
	ErrBusy = errors.New("meta: too many in flight")
	// ErrTimeout: no answer within RequestTimeoutTicks. The command may still take effect.
	ErrTimeout = errors.New("meta: timed out, outcome unknown")
	// ErrFailed: the store hit an I/O error or a corrupt file and stopped; the node must
	// restart. A proposal answered with it may or may not take effect.
	ErrFailed = errors.New("meta: failed")
	// ErrCorrupt: a file or an entry fails its check in a way a crash cannot explain. It
	// comes wrapped in ErrFailed.
	ErrCorrupt = errors.New("meta: corrupt")
	// ErrLostState: the leader holds as durable here entries this replica does not have:
	// its data is gone (a wiped or replaced directory restarted under an old member id).
	// Raft cannot go on with it (etcd raft would panic); the node stops with this reason,
	// wrapped in ErrFailed, and the rest of the cluster is unaffected. The way back: forget
	// the member, then join under a new id.
	ErrLostState = errors.New("meta: this member's durable raft state is gone")
)

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// ValidName reports whether name is a valid topic name: 1 to 200 bytes of
// [A-Za-z0-9._-], and not "." or "..".
func ValidName(name string) bool {
	if len(name) == 0 || len(name) > NameBytesMax || name == "." || name == ".." {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' ||
			c == '_' ||
			c == '-'
		if !ok {
			return false
		}
	}
	return true
}

// normalize validates c without looking at the topics and fills a create's defaults, so
// that the entry carries every value: a later change of a default never changes what a
// replayed entry does.
func (c Command) normalize() (Command, error) {
	if isUserKind(c.Kind) {
		return c.normalizeUser()
	}
	if c.Username != "" || c.Hash != "" || len(c.Grants) > 0 {
		return c, invalid("a topic or member command takes no user fields")
	}
	if c.Actor != SystemActor && !access.ValidUsername(c.Actor) {
		return c, invalid("actor %q is not a username", c.Actor)
	}
	if isMemberKind(c.Kind) {
		if c.Actor != SystemActor {
			return c, invalid("a member command is the system's")
		}
		return c, c.checkMember()
	}
	if c.Member != 0 || c.Addr != "" || c.Alive {
		return c, invalid("a topic command takes no member fields")
	}
	if !ValidName(c.Name) {
		return c, invalid(
			"topic name must be 1-%d characters of [A-Za-z0-9._-], not . or ..",
			NameBytesMax,
		)
	}
	switch c.Kind {
	case CreateTopic:
		def := func(p *uint32, d uint32) *uint32 {
			if p == nil {
				return new(d)
			}
			return p
		}
		c.Partitions = def(c.Partitions, DefaultPartitions)
		c.MaxInFlightPerPartition = def(c.MaxInFlightPerPartition, DefaultMaxInFlightPerPartition)
		if c.RetentionMs == nil {
			c.RetentionMs = new(int64(DefaultRetentionMs))
		}
		if c.VisibilityTimeoutMs == nil {
			c.VisibilityTimeoutMs = new(int64(DefaultVisibilityTimeoutMs))
		}
	case DeleteTopic:
		if c.anySetting() {
			return c, invalid("delete takes only a name")
		}
	case PatchTopic:
	default:
		return c, invalid("unknown command kind %d", c.Kind)
	}
	return c, c.checkBounds()
}

// checkBounds checks the fields that are set.
func (c Command) checkBounds() error {
	if p := c.Partitions; p != nil && (*p < 1 || *p > PartitionsMax) {
		return invalid("partitions must be 1-%d", PartitionsMax)
	}
	if r := c.RetentionMs; r != nil && *r < 0 {
		return invalid("retention_ms must be 0 (forever) or more")
	}
	if v := c.VisibilityTimeoutMs; v != nil &&
		(*v < VisibilityTimeoutMsMin || *v > VisibilityTimeoutMsMax) {
		return invalid(
			"visibility_timeout_ms must be %d-%d",
			VisibilityTimeoutMsMin,
			VisibilityTimeoutMsMax,
		)
	}
	if m := c.MaxInFlightPerPartition; m != nil && (*m < 1 || *m > MaxInFlightPerPartitionMax) {
		return invalid("max_in_flight_per_partition must be 1-%d", MaxInFlightPerPartitionMax)
	}
	return nil
}

// machine is the replicated state: the topics. Every replica applies the same entries in
// the same order and reaches the same state; nothing here reads a clock or draws a number.
type machine struct {
	users   map[string]User // by name (users.go)
	byName  map[string]Topic
	byID    map[uint64]string
	members map[uint64]Member
	// forgotten holds the ids of members given up (forget.go) or removed
	// (decommission.go): never members again.
	forgotten map[uint64]bool
	removed   map[uint64]bool  // the forgotten ids that a decommission removed
	moves     map[moveKey]Move // the partition moves in progress (moves.go)
	// epochs: topic id -> each partition's epoch, raised when a forget reassigns it
	// (forget.go); absent, or shorter than the partitions: 0.
	epochs map[uint64][]uint32
	// cutEpochs: topic id -> the epoch each partition's last cutover gave it (moves.go);
	// absent, shorter or 0: none.
	cutEpochs map[uint64][]uint32
	owners    map[uint64][]uint64  // topic id -> owner of each partition (members.go)
	forwards  map[uint64]forwarder // member -> the forwards of its newest process (forwards.go)
	commands  uint64               // command entries applied, answered with an error or not
	// rebalanceAsked: a Rebalance or a new member's join was applied since the controller
	// last looked (a hint for the leader, not state: not in the snapshot).
	rebalanceAsked bool
}

func newMachine() *machine {
	return &machine{
		byName:    map[string]Topic{},
		byID:      map[uint64]string{},
		members:   map[uint64]Member{},
		forgotten: map[uint64]bool{},
		removed:   map[uint64]bool{},
		moves:     map[moveKey]Move{},
		epochs:    map[uint64][]uint32{},
		cutEpochs: map[uint64][]uint32{},
		owners:    map[uint64][]uint64{},
		forwards:  map[uint64]forwarder{},
		users:     map[string]User{},
	}
}

// check answers c against the current topics without changing them: the topic the command
// would produce (or touch), or the error it would get. c must be normalized.
func (m *machine) check(c Command) (Topic, error) {
	if isMemberKind(c.Kind) {
		return Topic{}, m.checkMember(c)
	}
	if isUserKind(c.Kind) {
		return Topic{}, m.checkUser(c)
	}
	t, exists := m.byName[c.Name]
	if !m.mayCreate(c.Actor, c.Name) && !(exists && c.Actor == t.Owner) {
		return Topic{}, ErrForbidden
	}
	switch c.Kind {
	case CreateTopic:
		if exists {
			return t, ErrExists
		}
		if len(m.byName) >= TopicsMax {
			return Topic{}, ErrTooManyTopics
		}
		if !c.everySetting() {
			return Topic{}, invalid("create entry without every field")
		}
		return Topic{
			Name: c.Name, Partitions: *c.Partitions, RetentionMs: *c.RetentionMs,
			VisibilityTimeoutMs: *c.VisibilityTimeoutMs, MaxInFlightPerPartition: *c.MaxInFlightPerPartition,
		}, nil
	case DeleteTopic:
		if !exists {
			return Topic{}, ErrNotFound
		}
		return t, nil
	case PatchTopic:
		if !exists {
			return Topic{}, ErrNotFound
		}
		if c.Partitions != nil {
			if *c.Partitions < t.Partitions {
				return t, invalid("partitions can only grow (now %d)", t.Partitions)
			}
			t.Partitions = *c.Partitions
		}
		if c.RetentionMs != nil {
			t.RetentionMs = *c.RetentionMs
		}
		if c.VisibilityTimeoutMs != nil {
			t.VisibilityTimeoutMs = *c.VisibilityTimeoutMs
		}
		if c.MaxInFlightPerPartition != nil {
			t.MaxInFlightPerPartition = *c.MaxInFlightPerPartition
		}
		return t, nil
	}
	return Topic{}, invalid("unknown command kind %d", c.Kind)
}

// apply applies the command of the entry at index, proposed at nowNs on the proposer's
// clock. The apply is the truth: it validates again, and a command that conflicts with the
// topics as they are now is answered with the error and changes nothing.
func (m *machine) apply(c Command, index uint64, nowNs int64) (result, error) {
	m.commands++
	if _, err := c.normalizeForApply(); err != nil {
		return result{}, err
	}
	t, err := m.check(c)
	if err != nil {
		return result{Topic: t}, err
	}
	if isUserKind(c.Kind) {
		return result{User: m.applyUser(c, nowNs)}, nil
	}
	switch c.Kind {
	case CreateTopic:
		assert.That(m.byID[index] == "", "meta: incarnation id reused")
		t.ID = index
		t.CreatedAtMs = nowNs / 1_000_000
		t.Owner = c.Actor
		m.setOwners(t.ID, m.assign(nil, int(t.Partitions), index))
		m.byName[t.Name] = t
		m.byID[t.ID] = t.Name
	case DeleteTopic:
		delete(m.byName, t.Name)
		delete(m.byID, t.ID)
		delete(m.owners, t.ID)
		delete(m.epochs, t.ID)
		delete(m.cutEpochs, t.ID)
		m.endMoves(func(mv Move) bool { return mv.TopicID == t.ID })
	case PatchTopic:
		if old := m.owners[t.ID]; len(old) > 0 {
			m.setOwners(t.ID, m.assign(old, int(t.Partitions), index))
		}
		m.byName[t.Name] = t
	case JoinMember, SetMemberAlive:
		m.applyMember(c)
	case ForgetMember:
		m.forget(c.Member)
	case DecommissionMember, CancelDecommission, RemoveMember:
		m.applyDecommission(c)
	case StartMove, FreezeMove, CutOverMove, AbortMove:
		m.applyMove(c, index)
	case Rebalance:
		m.rebalanceAsked = true // the controller's hint (rebalance_control.go)
	}
	return result{Topic: t}, nil
}

// result is what an applied command answers: the topic, or the user, it touched.
type result struct {
	Topic Topic
	User  User
}

// normalizeForApply is normalize without filling defaults: an entry carries its values.
func (c Command) normalizeForApply() (Command, error) {
	if c.Kind == CreateTopic && !c.everySetting() {
		return c, invalid("create entry without every field")
	}
	return c.normalize()
}

// anySetting reports whether c sets any of a topic's settings.
func (c Command) anySetting() bool {
	return c.Partitions != nil || c.RetentionMs != nil || c.VisibilityTimeoutMs != nil ||
		c.MaxInFlightPerPartition != nil
}

// everySetting reports whether c sets every one of a topic's settings (a create entry).
func (c Command) everySetting() bool {
	return c.Partitions != nil && c.RetentionMs != nil && c.VisibilityTimeoutMs != nil &&
		c.MaxInFlightPerPartition != nil
}

// add inserts a topic read from a snapshot.
func (m *machine) add(t Topic) {
	m.byName[t.Name] = t
	m.byID[t.ID] = t.Name
}
