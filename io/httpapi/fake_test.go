package httpapi

import (
	"context"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"sync"

	"github.com/narad/narad/core/node"
)

// fakeBroker is an in-memory Broker: topics of partitions of records, queue-style leases
// with handles "h-1", "h-2", …, and a log of every call. It never blocks, except Produce
// while gate is set (see gateProduce).
type fakeBroker struct {
	mu       sync.Mutex
	topics   map[string]*fakeTopic
	leases   map[string]*fakeLease
	handles  int
	nextID   uint64
	calls    []string
	consumes []node.ConsumeRequest
	fail     map[string]error // method name -> the error it returns
	notReady error
	u        *fakeUsers // nil until withUsers

	gate    chan struct{} // Produce waits for it to close …
	entered chan struct{} // … after sending here
}

type fakeRecord struct {
	key     []byte
	hasKey  bool
	payload []byte
	tsMs    int64
}

type fakeTopic struct {
	t      node.Topic
	parts  [][]fakeRecord
	oldest []uint64 // offsets below are removed by retention
	leased map[[2]uint64]bool
	acked  map[[2]uint64]bool
	rr     uint32
}

type fakeLease struct {
	topic   string
	at      [2]uint64 // partition, offset
	settled bool
}

const fakeNowMs = 1_700_000_000_123

func newFakeBroker() *fakeBroker {
	return &fakeBroker{topics: map[string]*fakeTopic{}, leases: map[string]*fakeLease{}, fail: map[string]error{}}
}

// gateProduce makes every Produce announce itself on the returned channel and then wait
// until release is closed.
func (f *fakeBroker) gateProduce() (entered <-chan struct{}, release chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gate, f.entered = make(chan struct{}), make(chan struct{}, 16)
	return f.entered, f.gate
}

// record logs a call and returns the error the test set for it.
func (f *fakeBroker) record(method, format string, args ...any) error {
	f.calls = append(f.calls, method+" "+fmt.Sprintf(format, args...))
	return f.fail[method]
}

func (f *fakeBroker) callLog() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *fakeBroker) addTopic(name string, partitions uint32) *fakeTopic {
	f.nextID++
	ft := &fakeTopic{
		t: node.Topic{Name: name, ID: f.nextID, Partitions: partitions, RetentionMs: 7 * 24 * 3600 * 1000,
			VisibilityTimeoutMs: 30_000, MaxInFlightPerPartition: 1024, CreatedAtMs: fakeNowMs},
		parts: make([][]fakeRecord, partitions), oldest: make([]uint64, partitions),
		leased: map[[2]uint64]bool{}, acked: map[[2]uint64]bool{},
	}
	f.topics[name] = ft
	return ft
}

func (f *fakeBroker) Produce(ctx context.Context, topic string, msgs []node.ProduceMessage) (int, error) {
	f.mu.Lock()
	gate, entered := f.gate, f.entered
	f.mu.Unlock()
	if gate != nil {
		entered <- struct{}{}
		<-gate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("Produce", "%s %d", topic, len(msgs)); err != nil {
		return 0, err
	}
	ft, ok := f.topics[topic]
	if !ok {
		return 0, node.ErrTopicNotFound
	}
	for i, m := range msgs {
		if m.Partition >= int64(ft.t.Partitions) {
			if len(msgs) > 1 {
				return 0, fmt.Errorf("message %d: %w", i, node.ErrPartitionRange)
			}
			return 0, node.ErrPartitionRange
		}
	}
	for _, m := range msgs {
		p := ft.pick(m)
		ft.parts[p] = append(ft.parts[p], fakeRecord{key: m.Key, hasKey: m.HasKey, payload: m.Payload, tsMs: fakeNowMs})
	}
	return len(msgs), nil
}

func (ft *fakeTopic) pick(m node.ProduceMessage) uint32 {
	switch {
	case m.Partition >= 0:
		return uint32(m.Partition)
	case m.HasKey:
		h := fnv.New32a()
		h.Write(m.Key)
		return h.Sum32() % ft.t.Partitions
	}
	ft.rr++
	return ft.rr % ft.t.Partitions
}

func (f *fakeBroker) Consume(ctx context.Context, req node.ConsumeRequest) ([]node.Message, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.consumes = append(f.consumes, req)
	if err := f.record("Consume", "%s p=%d max=%d wait=%d off=%v/%d", req.Topic, req.Partition, req.Max, req.WaitNs, req.HasOffset, req.Offset); err != nil {
		return nil, err
	}
	ft, ok := f.topics[req.Topic]
	if !ok {
		return nil, node.ErrTopicNotFound
	}
	if req.Partition >= int64(ft.t.Partitions) {
		return nil, node.ErrPartitionRange
	}
	if req.HasOffset {
		return ft.replay(uint32(req.Partition), req.Offset, req.Max)
	}
	var out []node.Message
	for p := range ft.parts {
		if req.Partition >= 0 && int64(p) != req.Partition {
			continue
		}
		for off := ft.oldest[p]; off < uint64(len(ft.parts[p])) && len(out) < req.Max; off++ {
			at := [2]uint64{uint64(p), off}
			if ft.leased[at] || ft.acked[at] {
				continue
			}
			ft.leased[at] = true
			f.handles++
			h := fmt.Sprintf("h-%d", f.handles)
			f.leases[h] = &fakeLease{topic: req.Topic, at: at}
			out = append(out, ft.message(uint32(p), off, h))
		}
	}
	return out, nil
}

func (ft *fakeTopic) replay(p uint32, off uint64, max int) ([]node.Message, error) {
	if off < ft.oldest[p] {
		return nil, node.ErrOffsetRemoved
	}
	var out []node.Message
	for ; off < uint64(len(ft.parts[p])) && len(out) < max; off++ {
		out = append(out, ft.message(p, off, ""))
	}
	return out, nil
}

func (ft *fakeTopic) message(p uint32, off uint64, handle string) node.Message {
	r := ft.parts[p][off]
	return node.Message{Topic: ft.t.Name, Partition: p, Offset: off, Key: r.key, HasKey: r.hasKey,
		Payload: r.payload, TimestampMs: r.tsMs, ReceiptHandle: handle}
}

func (f *fakeBroker) Ack(ctx context.Context, _ string, topic string, handles []string, mode node.AckMode) ([]error, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("Ack", "%s %v mode=%d", topic, handles, mode); err != nil {
		return nil, err
	}
	ft, ok := f.topics[topic]
	if !ok {
		return nil, node.ErrTopicNotFound
	}
	out := make([]error, len(handles))
	for i, h := range handles {
		l, ok := f.leases[h]
		switch {
		case !ok:
			out[i] = node.ErrBadHandle
		case l.topic != topic || l.settled:
			out[i] = node.ErrLeaseGone
		case mode == node.AckSettle:
			l.settled, ft.acked[l.at] = true, true
		case mode == node.AckRelease:
			l.settled, ft.leased[l.at] = true, false
		}
	}
	return out, nil
}

func (f *fakeBroker) CreateTopic(ctx context.Context, spec node.TopicSpec) (node.Topic, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("CreateTopic", "%s", spec.Name); err != nil {
		return node.Topic{}, err
	}
	if _, ok := f.topics[spec.Name]; ok {
		return node.Topic{}, node.ErrTopicExists
	}
	if f.u != nil && spec.Actor != "" { // the creator owns the topic (meta.Topic.Owner)
		f.u.owners[spec.Name] = spec.Actor
		f.u.publish()
	}
	parts := uint32(3)
	if spec.Partitions != nil {
		parts = *spec.Partitions
	}
	if parts == 0 {
		return node.Topic{}, fmt.Errorf("%w: partitions must be at least 1", node.ErrInvalid)
	}
	ft := f.addTopic(spec.Name, parts)
	if spec.RetentionMs != nil {
		ft.t.RetentionMs = *spec.RetentionMs
	}
	if spec.VisibilityTimeoutMs != nil {
		ft.t.VisibilityTimeoutMs = *spec.VisibilityTimeoutMs
	}
	if spec.MaxInFlightPerPartition != nil {
		ft.t.MaxInFlightPerPartition = *spec.MaxInFlightPerPartition
	}
	return ft.t, nil
}

func (f *fakeBroker) GetTopic(ctx context.Context, name string) (node.Topic, []node.PartitionStats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("GetTopic", "%s", name); err != nil {
		return node.Topic{}, nil, err
	}
	ft, ok := f.topics[name]
	if !ok {
		return node.Topic{}, nil, node.ErrTopicNotFound
	}
	stats := make([]node.PartitionStats, len(ft.parts))
	for p, recs := range ft.parts {
		stats[p] = node.PartitionStats{Index: uint32(p), HighWatermark: uint64(len(recs)), OldestOffset: ft.oldest[p],
			NextOffset: uint64(len(recs)), OwnerNode: "n1", SizeBytes: int64(len(recs)) * 10}
	}
	return ft.t, stats, nil
}

func (f *fakeBroker) ListTopics(ctx context.Context, limit int, after string) ([]node.Topic, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("ListTopics", "%d %q", limit, after); err != nil {
		return nil, "", err
	}
	var names []string
	for n := range f.topics {
		if n > after {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	next := ""
	if len(names) > limit {
		names = names[:limit]
		next = names[limit-1]
	}
	out := make([]node.Topic, len(names))
	for i, n := range names {
		out[i] = f.topics[n].t
	}
	return out, next, nil
}

func (f *fakeBroker) PatchTopic(ctx context.Context, name string, p node.TopicPatch) (node.Topic, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("PatchTopic", "%s", name); err != nil {
		return node.Topic{}, err
	}
	ft, ok := f.topics[name]
	if !ok {
		return node.Topic{}, node.ErrTopicNotFound
	}
	if p.Partitions != nil {
		if *p.Partitions < ft.t.Partitions {
			return node.Topic{}, fmt.Errorf("%w: partitions can only grow", node.ErrInvalid)
		}
		for uint32(len(ft.parts)) < *p.Partitions {
			ft.parts, ft.oldest = append(ft.parts, nil), append(ft.oldest, 0)
		}
		ft.t.Partitions = *p.Partitions
	}
	if p.RetentionMs != nil {
		ft.t.RetentionMs = *p.RetentionMs
	}
	return ft.t, nil
}

func (f *fakeBroker) ForgetMember(ctx context.Context, id uint64, dryRun bool) (node.ForgetReport, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("ForgetMember", ""); err != nil {
		return node.ForgetReport{}, err
	}
	switch id {
	case 1:
		return node.ForgetReport{}, fmt.Errorf("%w: meta: the member is alive", node.ErrRefused)
	case 2:
		return node.ForgetReport{Member: 2, DryRun: dryRun,
			Partitions: []node.ForgetPartition{{Topic: "orders", Partition: 1, From: 2, To: 1, Epoch: 1, FirstOffset: 1 << 40,
				Marked: true, HighWatermark: 12, Oldest: 4}, {Topic: "orders", Partition: 3, From: 2, To: 1, Epoch: 1,
				FirstOffset: 1 << 40}}}, nil
	}
	return node.ForgetReport{}, node.ErrMemberNotFound
}

// DecommissionMember: member 1 is refused by a guard, 2 allowed, 3 refused on a dry run.
func (f *fakeBroker) DecommissionMember(ctx context.Context, id uint64, dryRun bool) (node.DecommissionReport, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("DecommissionMember", ""); err != nil {
		return node.DecommissionReport{}, err
	}
	switch id {
	case 1:
		return node.DecommissionReport{}, fmt.Errorf("%w: meta: refused by a membership guard: quorum", node.ErrRefused)
	case 2:
		return node.DecommissionReport{Member: 2, DryRun: dryRun}, nil
	case 3:
		return node.DecommissionReport{Member: 3, DryRun: dryRun, Partitions: 4, Refusal: "partitions: member 3 owns 4"}, nil
	}
	return node.DecommissionReport{}, node.ErrMemberNotFound
}

// CancelDecommission: member 2 drains, 1 does not.
func (f *fakeBroker) CancelDecommission(ctx context.Context, id uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("CancelDecommission", ""); err != nil {
		return err
	}
	switch id {
	case 1:
		return fmt.Errorf("%w: meta: the member is not draining", node.ErrRefused)
	case 2:
		return nil
	}
	return node.ErrMemberNotFound
}

func (f *fakeBroker) Members(ctx context.Context) ([]node.MemberInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("Members", ""); err != nil {
		return nil, err
	}
	return []node.MemberInfo{
		{ID: 1, Addr: "127.0.0.1:7942", Alive: true, Leader: true, Voter: true, OwnedPartitions: 3},
		{ID: 2, Addr: "127.0.0.1:7943", Alive: false, OwnedPartitions: 0},
	}, nil
}

func (f *fakeBroker) DeleteTopic(ctx context.Context, _ string, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("DeleteTopic", "%s", name); err != nil {
		return err
	}
	if _, ok := f.topics[name]; !ok {
		return node.ErrTopicNotFound
	}
	delete(f.topics, name)
	return nil
}

func (f *fakeBroker) Ready() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "Ready")
	return f.notReady
}

func (f *fakeBroker) Moves(ctx context.Context) ([]node.MoveInfo, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("Moves", ""); err != nil {
		return nil, err
	}
	return []node.MoveInfo{{Topic: "orders", Partition: 1, From: 1, To: 2, State: "frozen"}}, nil
}

func (f *fakeBroker) MovePartition(ctx context.Context, topic string, part uint32, to uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("MovePartition", "%s", topic); err != nil {
		return err
	}
	if to == 9 {
		return fmt.Errorf("%w: meta: refused by a membership guard: destination", node.ErrRefused)
	}
	return nil
}

func (f *fakeBroker) AbortMove(ctx context.Context, topic string, part uint32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record("AbortMove", "%s", topic); err != nil {
		return err
	}
	if part != 1 {
		return node.ErrMoveNotFound
	}
	return nil
}

func (f *fakeBroker) Rebalance(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.record("Rebalance", "")
}
