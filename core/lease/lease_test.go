package lease_test

import (
	"errors"
	"testing"

	"github.com/narad/narad/core/lease"
)

const vis = 1000 // visibility timeout of these tests, ns

func newReady(t *testing.T, cfg lease.Config, hw uint64) *harness {
	t.Helper()
	if cfg.VisibilityTimeoutNs == 0 {
		cfg.VisibilityTimeoutNs = vis
	}
	if cfg.AckFlushIntervalNs == 0 {
		cfg.AckFlushIntervalNs = 200
	}
	h := newHarness(t, cfg, nil)
	if h.failed != nil {
		t.Fatalf("recovery failed: %v", h.failed)
	}
	h.setHW(hw)
	return h
}

func TestLeaseLowestAvailableFirst(t *testing.T) {
	h := newReady(t, lease.Config{}, 10)
	a := h.lease(3)
	if got := offsets(a); got != "0,1,2" {
		t.Fatalf("first lease: %s", got)
	}
	if got := offsets(h.lease(2)); got != "3,4" {
		t.Fatalf("second lease: %s", got)
	}
	if a[0].Nonce == a[1].Nonce || a[1].Nonce == a[2].Nonce {
		t.Fatalf("nonces repeat: %+v", a)
	}
	if err := h.m.Nack(h.now, a[2].Offset, a[2].Nonce); err != nil {
		t.Fatal(err)
	}
	if err := h.m.Nack(h.now, a[1].Offset, a[1].Nonce); err != nil {
		t.Fatal(err)
	}
	b := h.lease(3)
	if got := offsets(b); got != "1,2,5" {
		t.Fatalf("released offsets go first, lowest first: %s", got)
	}
	if b[0].Deliveries != 2 || b[1].Deliveries != 2 || b[2].Deliveries != 1 {
		t.Fatalf("delivery counts: %+v", b)
	}
	if b[0].DeadlineNs != h.now+vis {
		t.Fatalf("deadline %d, want %d", b[0].DeadlineNs, h.now+vis)
	}
	if st := h.m.Stats(); st.Leases != 8 || st.Redeliveries != 2 || st.InFlight != 6 {
		t.Fatalf("stats %+v", st)
	}
}

func TestExpiryRedeliversAndOldReceiptGone(t *testing.T) {
	h := newReady(t, lease.Config{}, 1)
	r := h.lease(1)[0]
	if at, ok := h.m.NextDeadline(); !ok || at != r.DeadlineNs {
		t.Fatalf("next deadline %d %v, want the lease's %d", at, ok, r.DeadlineNs)
	}
	h.advance(vis - 1)
	if h.m.Available(h.now) || len(h.lease(1)) != 0 {
		t.Fatalf("leased record available before its deadline")
	}
	h.advance(1) // at the deadline: expired
	if !h.m.Available(h.now) {
		t.Fatalf("expired record not available")
	}
	for _, err := range []error{h.ack(r), h.m.Nack(h.now, r.Offset, r.Nonce)} {
		if !errors.Is(err, lease.ErrGone) {
			t.Fatalf("old receipt after expiry: %v", err)
		}
	}
	if _, err := h.m.Extend(h.now, r.Offset, r.Nonce); !errors.Is(err, lease.ErrGone) {
		t.Fatalf("extend after expiry: %v", err)
	}
	r2 := h.lease(1)
	if len(r2) != 1 || r2[0].Offset != 0 || r2[0].Deliveries != 2 || r2[0].Nonce == r.Nonce {
		t.Fatalf("redelivery: %+v", r2)
	}
	if err := h.ack(r); !errors.Is(err, lease.ErrGone) {
		t.Fatalf("old receipt after redelivery to someone else: %v", err)
	}
	h.mustAck(r2[0])
	if st := h.m.Stats(); st.Expiries != 1 || st.Gone != 4 || st.Acks != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestExpiryWithoutTickIsSeenByEveryCall(t *testing.T) {
	h := newReady(t, lease.Config{}, 2)
	a := h.lease(2)
	h.now += vis // no Tick: the next call sees the expiry itself
	if err := h.ack(a[1]); !errors.Is(err, lease.ErrGone) {
		t.Fatalf("ack after the deadline: %v", err)
	}
	if got := offsets(h.lease(5)); got != "0,1" {
		t.Fatalf("expired records, lowest first: %s", got)
	}
}

func TestNackReleasesAtOnce(t *testing.T) {
	h := newReady(t, lease.Config{}, 1)
	r := h.lease(1)[0]
	if err := h.m.Nack(h.now, r.Offset, r.Nonce); err != nil {
		t.Fatal(err)
	}
	if !h.m.Available(h.now) || h.m.InFlight() != 0 {
		t.Fatalf("nacked record not available at once")
	}
	if err := h.m.Nack(h.now, r.Offset, r.Nonce); !errors.Is(err, lease.ErrGone) {
		t.Fatalf("second nack: %v", err)
	}
	if err := h.ack(r); !errors.Is(err, lease.ErrGone) {
		t.Fatalf("ack after nack: %v", err)
	}
	r2 := h.lease(1)
	if len(r2) != 1 || r2[0].Offset != 0 || r2[0].Deliveries != 2 {
		t.Fatalf("after nack: %+v", r2)
	}
}

func TestExtendRenews(t *testing.T) {
	h := newReady(t, lease.Config{}, 1)
	r := h.lease(1)[0]
	h.advance(800)
	d, err := h.m.Extend(h.now, r.Offset, r.Nonce)
	if err != nil || d != 800+vis {
		t.Fatalf("extend: %d %v", d, err)
	}
	if at, _ := h.m.NextDeadline(); at != d {
		t.Fatalf("next deadline %d, want the extended %d", at, d)
	}
	h.advance(vis - 1) // past the first deadline, before the extended one
	if h.m.Available(h.now) {
		t.Fatalf("extended lease expired early")
	}
	h.mustAck(r)
	if h.m.InFlight() != 0 || h.m.AckFloor() != 1 {
		t.Fatalf("after ack: in flight %d floor %d", h.m.InFlight(), h.m.AckFloor())
	}
}

func TestWrongNonceIsGone(t *testing.T) {
	h := newReady(t, lease.Config{}, 3)
	r := h.lease(1)[0]
	bad := r
	bad.Nonce++
	if err := h.ack(bad); !errors.Is(err, lease.ErrGone) {
		t.Fatalf("wrong nonce: %v", err)
	}
	for _, off := range []uint64{1, 2, 3, 1 << 40} { // never leased, or at or past the high-watermark
		if err := h.m.Ack(h.now, off, r.Nonce); !errors.Is(err, lease.ErrGone) {
			t.Fatalf("offset %d never leased: %v", off, err)
		}
	}
	h.mustAck(r) // the lease survived the forgeries
}

func TestDoubleAckIsGone(t *testing.T) {
	h := newReady(t, lease.Config{}, 3)
	rs := h.lease(3)
	h.mustAck(rs[1])
	if err := h.ack(rs[1]); !errors.Is(err, lease.ErrGone) {
		t.Fatalf("second ack: %v", err)
	}
	if _, err := h.m.Extend(h.now, rs[1].Offset, rs[1].Nonce); !errors.Is(err, lease.ErrGone) {
		t.Fatalf("extend after ack: %v", err)
	}
	h.mustAck(rs[0]) // floor moves over 0 and 1
	if h.m.AckFloor() != 2 {
		t.Fatalf("floor %d, want 2", h.m.AckFloor())
	}
	if err := h.ack(rs[0]); !errors.Is(err, lease.ErrGone) {
		t.Fatalf("ack below the floor: %v", err)
	}
	h.advance(2 * vis)
	if got := offsets(h.lease(5)); got != "2" {
		t.Fatalf("acked records must not come back: %s", got)
	}
}

func TestAckFloorAdvancesOverContiguousAcks(t *testing.T) {
	h := newReady(t, lease.Config{}, 200)
	rs := h.lease(200)
	for _, i := range []int{1, 3, 64, 65, 130} {
		h.mustAck(rs[i])
	}
	if h.m.AckFloor() != 0 || h.m.Stats().AckedAboveFloor != 5 {
		t.Fatalf("floor %d stats %+v", h.m.AckFloor(), h.m.Stats())
	}
	h.mustAck(rs[0])
	if h.m.AckFloor() != 2 {
		t.Fatalf("floor %d, want 2", h.m.AckFloor())
	}
	for i := 2; i < 130; i++ {
		if i != 3 && i != 64 && i != 65 {
			h.mustAck(rs[i])
		}
	}
	if h.m.AckFloor() != 131 || h.m.Stats().AckedAboveFloor != 0 {
		t.Fatalf("floor %d stats %+v", h.m.AckFloor(), h.m.Stats())
	}
	if !h.m.Acked(5) || !h.m.Acked(130) || h.m.Acked(131) {
		t.Fatalf("Acked disagrees with the floor")
	}
}

func TestMaxInFlightCap(t *testing.T) {
	h := newReady(t, lease.Config{MaxInFlight: 3}, 10)
	rs := h.lease(10)
	if got := offsets(rs); got != "0,1,2" {
		t.Fatalf("cap 3: %s", got)
	}
	if h.m.Available(h.now) || len(h.lease(1)) != 0 {
		t.Fatalf("lease over the cap")
	}
	h.mustAck(rs[0])
	if got := offsets(h.lease(10)); got != "3" {
		t.Fatalf("one slot freed: %s", got)
	}
	h.m.SetMaxInFlight(1) // lowered below the leases held: nothing new until under it
	h.mustAck(rs[1])
	if len(h.lease(1)) != 0 || h.m.InFlight() != 2 {
		t.Fatalf("lease over a lowered cap; in flight %d", h.m.InFlight())
	}
	h.m.SetMaxInFlight(0) // the default, 1,024
	if got := offsets(h.lease(10)); got != "4,5,6,7,8,9" {
		t.Fatalf("default cap: %s", got)
	}
}

func TestHighWatermarkGates(t *testing.T) {
	h := newReady(t, lease.Config{}, 0)
	if h.m.Available(h.now) || len(h.lease(5)) != 0 {
		t.Fatalf("leased with nothing committed")
	}
	h.setHW(2)
	if got := offsets(h.lease(5)); got != "0,1" {
		t.Fatalf("hw 2: %s", got)
	}
	if h.m.Available(h.now) {
		t.Fatalf("available at the high-watermark")
	}
	h.setHW(3)
	if !h.m.Available(h.now) || offsets(h.lease(5)) != "2" {
		t.Fatalf("hw 3")
	}
	defer func() {
		if recover() == nil {
			t.Fatalf("a high-watermark moving backwards must panic")
		}
	}()
	h.m.SetHighWatermark(2)
}

func TestSetOldestDropsState(t *testing.T) {
	h := newReady(t, lease.Config{}, 10)
	rs := h.lease(6)
	h.mustAck(rs[4])
	if err := h.m.Nack(h.now, rs[2].Offset, rs[2].Nonce); err != nil {
		t.Fatal(err)
	}
	h.setOldest(5)
	for _, i := range []int{0, 1, 3} {
		if err := h.ack(rs[i]); !errors.Is(err, lease.ErrGone) {
			t.Fatalf("lease of removed offset %d: %v", i, err)
		}
	}
	st := h.m.Stats()
	if st.InFlight != 1 || st.Released != 0 || st.AckFloor != 5 || st.AckedAboveFloor != 0 {
		t.Fatalf("after SetOldest(5): %+v", st)
	}
	if got := offsets(h.lease(3)); got != "6,7,8" {
		t.Fatalf("after SetOldest: %s", got)
	}
	h.mustAck(rs[5])
	h.setOldest(3) // backwards: ignored
	if h.m.AckFloor() != 6 {
		t.Fatalf("floor %d", h.m.AckFloor())
	}
	h.setOldest(20) // past everything, and past the high-watermark
	if h.m.InFlight() != 0 || h.m.AckFloor() != 20 || h.m.Available(h.now) {
		t.Fatalf("after SetOldest(20): %+v", h.m.Stats())
	}
	h.setHW(22)
	if got := offsets(h.lease(5)); got != "20,21" {
		t.Fatalf("after SetOldest(20), hw 22: %s", got)
	}
}

func TestAckWindowBound(t *testing.T) {
	h := newReady(t, lease.Config{AckWindowMax: 4}, 100)
	rs := h.lease(10)
	if got := offsets(rs); got != "0,1,2,3" {
		t.Fatalf("window 4: %s", got)
	}
	for _, r := range rs[1:] {
		h.mustAck(r)
	}
	if h.m.Available(h.now) || len(h.lease(1)) != 0 {
		t.Fatalf("a fresh offset leased AckWindowMax past the floor")
	}
	if err := h.m.Nack(h.now, rs[0].Offset, rs[0].Nonce); err != nil {
		t.Fatal(err)
	}
	r0 := h.lease(5) // released offsets are not held back by the window
	if offsets(r0) != "0" {
		t.Fatalf("released offset at a full window: %s", offsets(r0))
	}
	h.mustAck(r0[0])
	if got := offsets(h.lease(10)); got != "4,5,6,7" {
		t.Fatalf("window moved with the floor: %s", got)
	}
}

func TestVisibilityTimeoutPatch(t *testing.T) {
	h := newReady(t, lease.Config{}, 3)
	a := h.lease(1)[0]
	h.m.SetVisibilityTimeout(50)
	b := h.lease(1)[0]
	if a.DeadlineNs != vis || b.DeadlineNs != 50 {
		t.Fatalf("deadlines %d %d", a.DeadlineNs, b.DeadlineNs)
	}
	if d, _ := h.m.Extend(h.now, a.Offset, a.Nonce); d != 50 {
		t.Fatalf("extend uses the new timeout: %d", d)
	}
	h.m.SetVisibilityTimeout(0)
	if c := h.lease(1)[0]; c.DeadlineNs != lease.DefaultVisibilityTimeoutNs {
		t.Fatalf("default timeout: %d", c.DeadlineNs)
	}
}

func TestNothingBeforeRecovery(t *testing.T) {
	m := lease.New(lease.Config{}, newRand())
	m.SetHighWatermark(5)
	m.Open(0)
	if rs := m.Lease(0, 5); rs != nil || m.Available(0) {
		t.Fatalf("leased before recovery: %+v", rs)
	}
	if err := m.Ack(0, 0, 0); !errors.Is(err, lease.ErrNotReady) {
		t.Fatalf("ack before recovery: %v", err)
	}
	if _, ok := m.NextDeadline(); ok {
		t.Fatalf("deadline before recovery")
	}
	if rd := m.Ready(); len(rd.Ops) != 1 || rd.Recovered != nil {
		t.Fatalf("first ready: %+v", rd)
	}
}
