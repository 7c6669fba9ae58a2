package lease_test

import (
	"errors"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/narad/narad/core/disk"
	"github.com/narad/narad/core/lease"
	"github.com/narad/narad/core/rng"
	"github.com/narad/narad/sim"
)

// offState is what the reference model knows of one offset.
type offState struct {
	acked      bool // in this process's memory (after a crash: what recovery found)
	leased     bool
	nonce      uint64
	deadlineNs int64
	deliveries uint32 // since recovery
}

// leaseModel is the reference: a plain map from offset to state, scanned in full.
type leaseModel struct {
	h           *harness
	st          map[uint64]*offState // every offset below the high-watermark
	receipts    []lease.Receipt      // every receipt ever handed out, stale ones too
	ackOrder    []uint64             // acks accepted by this process, in order
	everAcked   map[uint64]bool      // acks accepted by any process
	durable     map[uint64]bool      // acks that must survive any crash from now on
	vis         int64
	maxInFlight int
	window      uint64
}

// TestStateMachine drives a Manager with random leases, acks, nacks, extends (with true
// and forged receipts), time, high-watermark and retention moves, topic patches, disk
// completions in any order, failed writes and syncs, and crashes, and compares every
// answer with a reference model. After each crash it requires that no durable ack was
// lost, that no ack was invented, and that everything else below the high-watermark is
// deliverable again.
func TestStateMachine(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		seed := rapid.Uint64().Draw(rt, "seed")
		d := sim.NewDisk(rng.New(seed), sim.DiskConfig{
			CrashKeepProb:    rapid.Float64Range(0, 1).Draw(rt, "keep"),
			CrashTearProb:    rapid.Float64Range(0, 0.5).Draw(rt, "tear"),
			CrashGarbageProb: 0.5,
			ReadCorruptProb:  rapid.Float64Range(0, 0.05).Draw(rt, "readCorrupt"),
			ReadErrorProb:    rapid.Float64Range(0, 0.05).Draw(rt, "readError"),
		})
		m := &leaseModel{
			st: map[uint64]*offState{}, everAcked: map[uint64]bool{}, durable: map[uint64]bool{},
			vis:         rapid.Int64Range(50, 1000).Draw(rt, "vis"),
			maxInFlight: rapid.IntRange(1, 8).Draw(rt, "maxInFlight"),
			window:      uint64(rapid.IntRange(2, 40).Draw(rt, "window")),
		}
		cfg := lease.Config{
			VisibilityTimeoutNs: m.vis, MaxInFlight: m.maxInFlight, AckWindowMax: int(m.window),
			AckFlushIntervalNs: rapid.Int64Range(10, 500).Draw(rt, "flushInterval"),
			LogBytesMax:        rapid.Int64Range(40, 600).Draw(rt, "logBytesMax"),
			RecoveryReadBytes:  rapid.IntRange(16, 300).Draw(rt, "readBytes"),
		}
		m.h = newHarness(rt, cfg, d)
		if m.h.failed != nil {
			rt.Fatalf("first recovery failed: %v", m.h.failed)
		}
		m.raiseHW(rt)
		actions := map[string]func(*rapid.T){
			"lease":     m.lease,
			"lease2":    m.lease, // the common actions twice: a crash needs a history
			"ack":       func(t *rapid.T) { m.settle(t, "ack") },
			"ack2":      func(t *rapid.T) { m.settle(t, "ack") },
			"nack":      func(t *rapid.T) { m.settle(t, "nack") },
			"extend":    func(t *rapid.T) { m.settle(t, "extend") },
			"advance":   m.advance,
			"complete":  m.complete,
			"complete2": m.complete,
			"fail":      m.fail,
			"hw":        m.raiseHW,
			"oldest":    m.raiseOldest,
			"patch":     m.patch,
			"crash":     m.crash,
			"":          m.check,
		}
		for range 5 { // rapid runs about 30 actions per Repeat: a few rounds reach deeper states
			rt.Repeat(actions)
		}
	})
}

func (m *leaseModel) now() int64 { return m.h.now }

// expire releases the model's leases whose deadline passed.
func (m *leaseModel) expire() {
	for _, s := range m.st { //narad:unordered (each entry on its own)
		if s.leased && s.deadlineNs <= m.now() {
			s.leased = false
		}
	}
}

// floor is the lowest offset at or above the oldest that is not acked.
func (m *leaseModel) floor() uint64 {
	o := m.h.oldest
	for o < m.h.hw && m.st[o].acked {
		o++
	}
	return o
}

func (m *leaseModel) inFlight() int {
	n := 0
	for _, s := range m.st { //narad:unordered (a count)
		if s.leased {
			n++
		}
	}
	return n
}

// available lists, lowest first, what Lease may hand out now, ignoring the cap: offsets
// leased before (since recovery) always; never-leased ones only inside the window.
func (m *leaseModel) available() []uint64 {
	m.expire()
	var out []uint64
	floor := m.floor()
	for o := m.h.oldest; o < m.h.hw; o++ {
		s := m.st[o]
		if s.acked || s.leased {
			continue
		}
		if s.deliveries == 0 && o-floor >= m.window {
			break // fresh offsets above this one are outside the window too
		}
		out = append(out, o)
	}
	return out
}

func (m *leaseModel) lease(t *rapid.T) {
	n := rapid.IntRange(1, 6).Draw(t, "n")
	want := m.available()
	want = want[:min(len(want), n, max(0, m.maxInFlight-m.inFlight()))]
	got := m.h.lease(n)
	if fmt.Sprint(want) != "["+spaced(got)+"]" {
		t.Fatalf("Lease(%d) = %v, want %v", n, spaced(got), want)
	}
	for _, r := range got {
		s := m.st[r.Offset]
		s.leased, s.nonce, s.deadlineNs = true, r.Nonce, m.now()+m.vis
		s.deliveries++
		if r.DeadlineNs != s.deadlineNs || r.Deliveries != s.deliveries {
			t.Fatalf("receipt %+v, want deadline %d deliveries %d", r, s.deadlineNs, s.deliveries)
		}
		m.receipts = append(m.receipts, r)
	}
}

func spaced(rs []lease.Receipt) string {
	s := ""
	for i, r := range rs {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprint(r.Offset)
	}
	return s
}

// settle acks, nacks or extends with a receipt handed out earlier, or a forged one.
func (m *leaseModel) settle(t *rapid.T, how string) {
	if len(m.receipts) == 0 {
		t.Skip("no receipt yet")
	}
	r := m.receipts[rapid.IntRange(0, len(m.receipts)-1).Draw(t, "receipt")]
	if rapid.IntRange(0, 9).Draw(t, "forge") == 0 {
		r.Nonce++
	}
	m.expire()
	s := m.st[r.Offset]
	valid := r.Offset >= m.h.oldest && s.leased && s.nonce == r.Nonce
	var err error
	switch how {
	case "ack":
		err = m.h.ack(r)
	case "nack":
		err = m.h.m.Nack(m.now(), r.Offset, r.Nonce)
	case "extend":
		var d int64
		d, err = m.h.m.Extend(m.now(), r.Offset, r.Nonce)
		if err == nil && d != m.now()+m.vis {
			t.Fatalf("extend deadline %d, want %d", d, m.now()+m.vis)
		}
	}
	m.h.pump()
	if valid != (err == nil) || err != nil && !errors.Is(err, lease.ErrGone) {
		t.Fatalf("%s(%d) = %v, model says valid=%v", how, r.Offset, err, valid)
	}
	if !valid {
		return
	}
	switch how {
	case "ack":
		s.acked, s.leased = true, false
		m.ackOrder = append(m.ackOrder, r.Offset)
		m.everAcked[r.Offset] = true
	case "nack":
		s.leased = false
	case "extend":
		s.deadlineNs = m.now() + m.vis
	}
}

func (m *leaseModel) advance(t *rapid.T) {
	m.h.advance(rapid.Int64Range(0, 2*m.vis).Draw(t, "dt"))
	if rapid.Bool().Draw(t, "completeAll") {
		m.h.completeAll()
	}
}

func (m *leaseModel) complete(t *rapid.T) {
	if len(m.h.pending) == 0 {
		t.Skip("nothing in flight")
	}
	m.h.complete(rapid.IntRange(0, len(m.h.pending)-1).Draw(t, "op"), nil)
}

func (m *leaseModel) fail(t *rapid.T) {
	if len(m.h.pending) == 0 {
		t.Skip("nothing in flight")
	}
	i := rapid.IntRange(0, len(m.h.pending)-1).Draw(t, "op")
	k := m.h.pending[i].Kind
	m.h.complete(i, disk.ErrIO)
	if m.h.failed == nil {
		t.Fatalf("a failed %s must fail persistence", k)
	}
}

func (m *leaseModel) raiseHW(t *rapid.T) {
	hw := m.h.hw + uint64(rapid.IntRange(0, 12).Draw(t, "more"))
	for o := m.h.hw; o < hw; o++ {
		m.st[o] = &offState{}
	}
	m.h.setHW(hw)
}

func (m *leaseModel) raiseOldest(t *rapid.T) {
	o := m.h.oldest + uint64(rapid.IntRange(0, 4).Draw(t, "by"))
	if o > m.h.hw {
		t.Skip("retention does not pass the high-watermark here")
	}
	m.h.setOldest(o)
	for off := range m.st { //narad:unordered (each entry on its own)
		if off < o {
			m.st[off].leased = false
		}
	}
}

func (m *leaseModel) patch(t *rapid.T) {
	if rapid.Bool().Draw(t, "visOrCap") {
		m.vis = rapid.Int64Range(50, 1000).Draw(t, "vis")
		m.h.m.SetVisibilityTimeout(m.vis)
		m.h.cfg.VisibilityTimeoutNs = m.vis // the topic as a restarted node reads it
	} else {
		m.maxInFlight = rapid.IntRange(1, 8).Draw(t, "maxInFlight")
		m.h.m.SetMaxInFlight(m.maxInFlight)
		m.h.cfg.MaxInFlight = m.maxInFlight
	}
}

func (m *leaseModel) crash(t *rapid.T) {
	for _, o := range m.ackOrder[:m.h.m.Stats().AcksDurable] {
		m.durable[o] = true
	}
	m.h.crash()
	if m.h.failed != nil {
		t.Fatalf("recovery failed: %v", m.h.failed)
	}
	m.ackOrder, m.receipts = nil, nil
	for o := uint64(0); o < m.h.hw; o++ {
		got := m.h.m.Acked(o)
		switch {
		case o < m.h.oldest:
			if !got {
				t.Fatalf("offset %d below the oldest %d not settled after recovery", o, m.h.oldest)
			}
		case m.durable[o] && !got:
			t.Fatalf("durable ack of %d lost (decisions %v)", o, m.h.recovered.Decisions)
		case got && !m.everAcked[o]:
			t.Fatalf("ack of %d invented (decisions %v)", o, m.h.recovered.Decisions)
		}
		if got {
			m.durable[o] = true // read back from the files: it stays there
		}
		m.st[o] = &offState{acked: got}
	}
	m.check(t)
}

// check compares the manager's view with the model's after every step.
func (m *leaseModel) check(t *rapid.T) {
	avail := len(m.available()) > 0 && m.inFlight() < m.maxInFlight
	if got := m.h.m.Available(m.now()); got != avail {
		t.Fatalf("Available = %v, want %v", got, avail)
	}
	if got, want := m.h.m.InFlight(), m.inFlight(); got != want {
		t.Fatalf("InFlight = %d, want %d", got, want)
	}
	floor := m.floor()
	if got := m.h.m.AckFloor(); got != floor {
		t.Fatalf("AckFloor = %d, want %d", got, floor)
	}
	for o := m.h.oldest; o < m.h.hw; o++ {
		if m.h.m.Acked(o) != m.st[o].acked {
			t.Fatalf("Acked(%d) = %v", o, m.h.m.Acked(o))
		}
	}
	st := m.h.m.Stats()
	if st.AcksDurable > st.Acks || int(st.Acks) != len(m.ackOrder) {
		t.Fatalf("stats %+v, %d acks in the model", st, len(m.ackOrder))
	}
}
