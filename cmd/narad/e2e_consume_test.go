package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"strings"
	"time"
)

// The consume side of TestE2E: leases, long polls, replay, ack, nack and extend.

func testConsume(d *testDaemon) {
	t := d.t
	d.createTopic(`{"name":"c","partitions":2,"visibility_timeout_ms":600000}`)
	d.expect(http.StatusNoContent, http.MethodGet, "/v1/topics/c/consume", nil, nil)
	d.expect(http.StatusNoContent, http.MethodGet, "/v1/topics/c/consume?max=10&wait=0s", nil, nil)
	start := time.Now()
	d.expect(http.StatusNoContent, http.MethodGet, "/v1/topics/c/consume?wait=200ms", nil, nil)
	if took := time.Since(start); took < 150*time.Millisecond {
		t.Errorf("wait=200ms on an empty topic answered 204 after %v", took)
	}
	for i := range 5 {
		d.produce(http.StatusAccepted, "c", "partition=0", fmt.Appendf(nil, "c-%d", i))
	}
	d.waitCommitted("c", 5)
	m := d.consumeOne("c", "")
	if m.Topic != "c" || m.Partition != 0 || m.Offset != 0 || m.text(t) != "c-0" || m.ReceiptHandle == "" || m.Key != nil {
		t.Errorf("single consume: %+v", m)
	}
	if now := time.Now().Unix(); m.Timestamp < now-60 || m.Timestamp > now+60 {
		t.Errorf("timestamp %d is not Unix seconds near %d", m.Timestamp, now)
	}
	three := d.consumeMany("c", "max=3")
	if len(three) != 3 {
		t.Fatalf("max=3: %d messages", len(three))
	}
	for i, m := range three {
		if m.Offset != uint64(i+1) || m.text(t) != fmt.Sprintf("c-%d", i+1) || m.ReceiptHandle == "" {
			t.Errorf("max=3, message %d: %+v", i, m)
		}
	}
	rest := d.consumeMany("c", "max=100&partition=0")
	if len(rest) != 1 || rest[0].Offset != 4 {
		t.Errorf("max=100: %+v, want offset 4 alone", rest)
	}
	d.expect(http.StatusNoContent, http.MethodGet, "/v1/topics/c/consume?max=100", nil, nil) // all leased
	for _, q := range []string{"max=0", "max=101", "max=x", "wait=x", "wait=-1s", "partition=2", "partition=x",
		"offset=1", "partition=0&offset=x", "wait=%zz"} {
		d.expect(http.StatusBadRequest, http.MethodGet, "/v1/topics/c/consume?"+q, nil, nil)
	}
	d.expect(http.StatusNotFound, http.MethodGet, "/v1/topics/nope/consume", nil, nil)

	// A wait over 10 s is clamped, and says so (here a record is available at once).
	d.produce(http.StatusAccepted, "c", "partition=1", []byte("clamped"))
	r := d.expect(http.StatusOK, http.MethodGet, "/v1/topics/c/consume?wait=1m&partition=1", nil, nil)
	if r.header.Get("X-Narad-Wait-Clamped") == "" {
		t.Errorf("wait=1m: no X-Narad-Wait-Clamped header: %v", r.header)
	}
	r = d.expect(http.StatusNoContent, http.MethodGet, "/v1/topics/c/consume?wait=10ms", nil, nil)
	if r.header.Get("X-Narad-Wait-Clamped") != "" {
		t.Errorf("wait=10ms carries X-Narad-Wait-Clamped")
	}
}

// testLongPoll parks a consume on an empty topic, produces, and checks that the produce
// wakes it well before its wait ends.
func testLongPoll(d *testDaemon) {
	t := d.t
	d.createTopic(`{"name":"lp"}`)
	const wait = 8 * time.Second
	sent := make(chan struct{})
	type result struct {
		r    reply
		err  error
		took time.Duration
	}
	done := make(chan result, 1)
	req, err := http.NewRequest(http.MethodGet, d.base+"/v1/topics/lp/consume?wait="+wait.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The produce goes out once the consume request is written: the record then needs a
	// WAL fsync and a partition commit, so the consume is parked by the time it exists.
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { close(sent) },
	}))
	start := time.Now()
	go func() {
		r, err := d.send(req)
		done <- result{r, err, time.Since(start)}
	}()
	<-sent
	d.produce(http.StatusAccepted, "lp", "", []byte("wake up"))
	res := <-done
	if res.err != nil || res.r.status != http.StatusOK {
		t.Fatalf("long poll: %v %v", res.r, res.err)
	}
	var m messageJSON
	mustDecode(t, res.r.body, &m)
	if m.text(t) != "wake up" {
		t.Errorf("long poll got %+v", m)
	}
	if res.took > wait/2 {
		t.Errorf("long poll answered after %v, want well before its wait of %v", res.took, wait)
	}
	t.Logf("long poll woken after %v", res.took)
}

func testReplay(d *testDaemon) {
	t := d.t
	// Topic c, partition 0, holds c-0..c-4, all leased by testConsume.
	for off := range 5 {
		m := d.consumeOne("c", fmt.Sprintf("partition=0&offset=%d", off))
		if m.Offset != uint64(off) || m.Partition != 0 || m.text(t) != fmt.Sprintf("c-%d", off) || m.ReceiptHandle != "" {
			t.Errorf("replay offset %d: %+v", off, m)
		}
	}
	ms := d.consumeMany("c", "partition=0&offset=2&max=1")
	if len(ms) != 1 || ms[0].Offset != 2 || ms[0].ReceiptHandle != "" {
		t.Errorf("replay with max: %+v", ms)
	}
	d.expect(http.StatusNoContent, http.MethodGet, "/v1/topics/c/consume?partition=0&offset=5", nil, nil)
	d.expect(http.StatusNoContent, http.MethodGet, "/v1/topics/c/consume?partition=0&offset=1000000", nil, nil)
	d.expect(http.StatusBadRequest, http.MethodGet, "/v1/topics/c/consume?partition=9&offset=0", nil, nil)
	// A replay takes no lease: every record is still leased, none is available.
	d.expect(http.StatusNoContent, http.MethodGet, "/v1/topics/c/consume?partition=0", nil, nil)
}

func testAck(d *testDaemon) {
	t := d.t
	d.createTopic(`{"name":"a","partitions":1}`)
	d.createTopic(`{"name":"a2","partitions":1}`)
	for i := range 3 {
		d.produce(http.StatusAccepted, "a", "", fmt.Appendf(nil, "a-%d", i))
	}
	d.produce(http.StatusAccepted, "a2", "", []byte("a2-0"))
	d.waitCommitted("a", 3)
	d.waitCommitted("a2", 1)

	m0 := d.consumeOne("a", "")
	d.ack(http.StatusNoContent, "a", m0.ReceiptHandle, "")
	d.ack(http.StatusGone, "a", m0.ReceiptHandle, "")     // already settled
	d.ack(http.StatusGone, "a", m0.ReceiptHandle, "true") // cannot extend a settled lease

	m1 := d.consumeOne("a", "")
	d.ack(http.StatusNoContent, "a", m1.ReceiptHandle, "true")
	d.ack(http.StatusNoContent, "a", m1.ReceiptHandle, "true")
	d.ack(http.StatusBadRequest, "a", m1.ReceiptHandle, "false")
	d.ack(http.StatusBadRequest, "a", m1.ReceiptHandle, "1")
	d.ack(http.StatusNoContent, "a", m1.ReceiptHandle, "")

	// A nack makes the record deliverable again at once, under a new handle.
	m2 := d.consumeOne("a", "")
	if m2.Offset != 2 {
		t.Fatalf("third consume: offset %d", m2.Offset)
	}
	d.ack(http.StatusNoContent, "a", m2.ReceiptHandle, "0")
	again := d.consumeOne("a", "")
	if again.Offset != 2 || again.text(t) != "a-2" || again.ReceiptHandle == m2.ReceiptHandle {
		t.Fatalf("after a nack: %+v (nacked handle %q)", again, m2.ReceiptHandle)
	}
	d.ack(http.StatusGone, "a", m2.ReceiptHandle, "")  // redelivered to someone else
	d.ack(http.StatusGone, "a", m2.ReceiptHandle, "0") // the same
	d.ack(http.StatusNoContent, "a", again.ReceiptHandle, "")
	d.expect(http.StatusNoContent, http.MethodGet, "/v1/topics/a/consume", nil, nil)

	// Handles that are not valid here.
	other := d.consumeOne("a2", "")
	d.ack(http.StatusGone, "a", other.ReceiptHandle, "") // another topic's handle
	d.ack(http.StatusNoContent, "a2", other.ReceiptHandle, "")
	for _, h := range []string{"not-a-handle", "AAAA", base64.RawURLEncoding.EncodeToString(make([]byte, 28))} {
		d.ack(http.StatusGone, "a", h, "")
	}
	forged := []byte(m1.ReceiptHandle)
	forged[len(forged)-2] ^= 1 // another nonce
	d.ack(http.StatusGone, "a", string(forged), "")
	d.expect(http.StatusBadRequest, http.MethodPost, "/v1/topics/a/ack?receipt_handle=", nil, nil)
	d.expect(http.StatusBadRequest, http.MethodPost, "/v1/topics/a/ack", nil, nil)
	d.expect(http.StatusNotFound, http.MethodPost, "/v1/topics/nope/ack?receipt_handle="+m1.ReceiptHandle, nil, nil)
}

// testExpiredLease: a lease not acked within the visibility timeout expires, the record
// is delivered again (waking a parked consume), and the first handle is gone.
func testExpiredLease(d *testDaemon) {
	t := d.t
	d.createTopic(`{"name":"vis","partitions":1,"visibility_timeout_ms":300}`)
	d.produce(http.StatusAccepted, "vis", "", []byte("expiring"))
	first := d.consumeOne("vis", "wait=5s")
	start := time.Now()
	second := d.consumeOne("vis", "wait=8s") // parked until the lease expires
	if second.Offset != first.Offset || second.ReceiptHandle == first.ReceiptHandle {
		t.Fatalf("redelivery after expiry: %+v, first %+v", second, first)
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("redelivered after %v, visibility timeout 300ms", took)
	}
	d.ack(http.StatusGone, "vis", first.ReceiptHandle, "")
	d.ack(http.StatusGone, "vis", first.ReceiptHandle, "true")
	d.ack(http.StatusNoContent, "vis", second.ReceiptHandle, "")
	d.expect(http.StatusNoContent, http.MethodGet, "/v1/topics/vis/consume", nil, nil)
}

func testBatchAck(d *testDaemon) {
	t := d.t
	d.createTopic(`{"name":"ba","partitions":1}`)
	d.produceCommitted("ba", "ba", 3)
	ms := d.consumeMany("ba", "max=3")
	if len(ms) != 3 {
		t.Fatalf("consumed %d of 3", len(ms))
	}
	h0, h1, h2 := ms[0].ReceiptHandle, ms[1].ReceiptHandle, ms[2].ReceiptHandle
	body := fmt.Sprintf(`{"receipt_handles":[%q,"bogus",%q,%q]}`, h0, h0, h1)
	r := d.expect(http.StatusOK, http.MethodPost, "/v1/topics/ba/ack", jsonType, []byte(body))
	var res struct {
		Results []struct {
			Status int    `json:"status"`
			Error  string `json:"error"`
		} `json:"results"`
	}
	mustDecode(t, r.body, &res)
	want := []int{204, 410, 410, 204}
	if len(res.Results) != len(want) {
		t.Fatalf("batch ack: %s", r.body)
	}
	for i, w := range want {
		if res.Results[i].Status != w || (w == 410) != (res.Results[i].Error != "") {
			t.Errorf("batch ack result %d: %+v, want status %d", i, res.Results[i], w)
		}
	}
	// A batch nack (extend=0) then a batch settle.
	r = d.expect(http.StatusOK, http.MethodPost, "/v1/topics/ba/ack?extend=0", jsonType, fmt.Appendf(nil, `{"receipt_handles":[%q]}`, h2))
	if !bytes.Equal(r.body, []byte(`{"results":[{"status":204}]}`)) {
		t.Errorf("batch nack: %s", r.body)
	}
	m := d.consumeOne("ba", "")
	if m.Offset != 2 {
		t.Fatalf("after the batch nack: %+v", m)
	}
	d.expect(http.StatusOK, http.MethodPost, "/v1/topics/ba/ack", jsonType, fmt.Appendf(nil, `{"receipt_handles":[%q]}`, m.ReceiptHandle))
	for _, b := range []string{`{"receipt_handles":[]}`, `{"receipt_handles":["x"],"more":1}`, `{`, manyHandles(101)} {
		d.expect(http.StatusBadRequest, http.MethodPost, "/v1/topics/ba/ack", jsonType, []byte(b))
	}
	d.expect(http.StatusNotFound, http.MethodPost, "/v1/topics/nope/ack", jsonType, []byte(`{"receipt_handles":["x"]}`))
}

func manyHandles(n int) string {
	hs := make([]string, n)
	for i := range hs {
		hs[i] = `"h"`
	}
	return `{"receipt_handles":[` + strings.Join(hs, ",") + `]}`
}
