package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestE2E drives one `narad serve` over real HTTP through every route of API.md and the
// error codes that a healthy node answers (429, 500, 503 and retention's 410 have their
// own tests in faults_test.go). Subtests run in order on the same node and each uses its
// own topics.
func TestE2E(t *testing.T) {
	d := startDaemon(t, t.TempDir(), []string{"-node-id", "e2e-node"}, nil)
	t.Run("operations", func(t *testing.T) { d.t = t; testOperations(d) })
	t.Run("topics", func(t *testing.T) { d.t = t; testTopics(d) })
	t.Run("produce", func(t *testing.T) { d.t = t; testProduce(d) })
	t.Run("produce batch", func(t *testing.T) { d.t = t; testProduceBatch(d) })
	t.Run("consume", func(t *testing.T) { d.t = t; testConsume(d) })
	t.Run("long poll", func(t *testing.T) { d.t = t; testLongPoll(d) })
	t.Run("replay", func(t *testing.T) { d.t = t; testReplay(d) })
	t.Run("ack", func(t *testing.T) { d.t = t; testAck(d) })
	t.Run("expired lease", func(t *testing.T) { d.t = t; testExpiredLease(d) })
	t.Run("batch ack", func(t *testing.T) { d.t = t; testBatchAck(d) })
	t.Run("delete and recreate", func(t *testing.T) { d.t = t; testDeleteRecreate(d) })
	t.Run("metrics", func(t *testing.T) { d.t = t; testMetrics(d) })
	t.Run("openapi document", func(t *testing.T) { d.t = t; testOpenAPIServed(d) }) // openapi_test.go
	d.t = t
	if s := d.shutdown(); s != 0 {
		t.Fatalf("serve exited with %d after SIGTERM, want 0", s)
	}
}

func testOperations(d *testDaemon) {
	t := d.t
	for _, path := range []string{"/healthz", "/readyz"} {
		r := d.expect(http.StatusOK, http.MethodGet, path, nil, nil)
		if string(r.body) != `{"status":"ok"}` || r.header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %v %q", path, r, r.header.Get("Content-Type"))
		}
	}
	r := d.expect(http.StatusOK, http.MethodGet, "/metrics", nil, nil)
	if !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") || !bytes.Contains(r.body, []byte("go_goroutines")) {
		t.Errorf("/metrics: Content-Type %q, body without go_goroutines", r.header.Get("Content-Type"))
	}
	d.expect(http.StatusNotFound, http.MethodGet, "/v1/nothing-here", nil, nil)
	// The node joins the members once its metastore leads: wait for it, then see itself.
	want := `{"members":[{"id":1,"addr":"` + d.addr + `","status":"alive","leader":true,"voter":true,"owned_partitions":`
	eventually(t, 5*time.Second, "the node listed as a member", func() bool {
		r = d.expect(http.StatusOK, http.MethodGet, "/v1/cluster/members", nil, nil)
		return strings.HasPrefix(string(r.body), want)
	})
	r = d.expect(http.StatusMethodNotAllowed, http.MethodDelete, "/v1/topics", nil, nil)
	if r.header.Get("Allow") == "" {
		t.Errorf("405 without an Allow header: %v", r)
	}
}

func testTopics(d *testDaemon) {
	t := d.t
	tp := d.createTopic(`{"name":"t.defaults_1-A"}`)
	want := topicJSON{Name: "t.defaults_1-A", ID: tp.ID, Partitions: 3, RetentionMs: 7 * 24 * 3600 * 1000,
		VisibilityTimeoutMs: 30_000, MaxInFlightPerPartition: 1024, CreatedAt: tp.CreatedAt}
	if tp.ID == 0 || !sameTopic(tp, want) || tp.PartitionStats != nil {
		t.Errorf("created with defaults: %+v, want %+v", tp, want)
	}
	if now := time.Now().Unix(); tp.CreatedAt < now-60 || tp.CreatedAt > now+60 {
		t.Errorf("created_at %d is not a Unix time in seconds near %d", tp.CreatedAt, now)
	}
	full := d.createTopic(`{"name":"t-full","partitions":2,"retention_ms":0,"visibility_timeout_ms":1500,"max_in_flight_per_partition":7}`)
	if full.Partitions != 2 || full.RetentionMs != 0 || full.VisibilityTimeoutMs != 1500 || full.MaxInFlightPerPartition != 7 || full.ID == tp.ID {
		t.Errorf("created with every field: %+v", full)
	}
	d.expect(http.StatusConflict, http.MethodPost, "/v1/topics", jsonType, []byte(`{"name":"t-full"}`))
	for _, body := range []string{
		``, `{`, `{"name":""}`, `{"name":"."}`, `{"name":".."}`, `{"name":"a/b"}`, `{"name":"sp ace"}`,
		`{"name":"` + strings.Repeat("n", 201) + `"}`, `{"name":"x","partitions":0}`, `{"name":"x","partitions":1025}`,
		`{"name":"x","retention_ms":-1}`, `{"name":"x","visibility_timeout_ms":0}`,
		`{"name":"x","max_in_flight_per_partition":0}`, `{"name":"x","colour":"red"}`, `{"name":"x"} {}`,
	} {
		d.expect(http.StatusBadRequest, http.MethodPost, "/v1/topics", jsonType, []byte(body))
	}
	d.createTopic(`{"name":"` + strings.Repeat("n", 200) + `"}`) // 200 characters is the limit
	d.expect(http.StatusNotFound, http.MethodGet, "/v1/topics/x", nil, nil)

	// GET with partition_stats.
	d.produce(http.StatusAccepted, "t-full", "partition=1", []byte("one"))
	d.produce(http.StatusAccepted, "t-full", "partition=1", []byte("two"))
	d.waitCommitted("t-full", 2)
	got := d.getTopic("t-full")
	if !sameTopic(got, full) || len(got.PartitionStats) != 2 {
		t.Fatalf("GET t-full: %+v, want %+v with 2 partition_stats", got, full)
	}
	for i, ps := range got.PartitionStats {
		wantHW := uint64(0)
		if i == 1 {
			wantHW = 2
		}
		if ps.Index != uint32(i) || ps.HighWatermark != wantHW || ps.NextOffset != wantHW || ps.OldestOffset != 0 ||
			ps.OwnerNode != "e2e-node" || ps.InFlight != 0 || (wantHW > 0) != (ps.SizeBytes > 0) {
			t.Errorf("partition_stats[%d] = %+v, want high_watermark %d owned by e2e-node", i, ps, wantHW)
		}
	}
	m := d.consumeOne("t-full", "partition=1")
	if got := d.getTopic("t-full").PartitionStats[1].InFlight; got != 1 {
		t.Errorf("in_flight after a consume = %d, want 1", got)
	}
	d.ack(http.StatusNoContent, "t-full", m.ReceiptHandle, "")

	// PATCH: grow, refuse to shrink, change settings.
	r := d.expect(http.StatusOK, http.MethodPatch, "/v1/topics/t-full", jsonType, []byte(`{"partitions":5,"retention_ms":60000}`))
	var patched topicJSON
	mustDecode(t, r.body, &patched)
	if patched.Partitions != 5 || patched.RetentionMs != 60000 || patched.ID != full.ID || patched.VisibilityTimeoutMs != 1500 {
		t.Errorf("patched: %+v", patched)
	}
	if n := len(d.getTopic("t-full").PartitionStats); n != 5 {
		t.Errorf("after growing to 5: %d partition_stats", n)
	}
	d.produce(http.StatusAccepted, "t-full", "partition=4", []byte("in a new partition"))
	if m := d.consumeOne("t-full", "partition=4&wait=5s"); m.Partition != 4 || m.text(t) != "in a new partition" {
		t.Errorf("consumed from the new partition: %+v", m)
	}
	d.expect(http.StatusBadRequest, http.MethodPatch, "/v1/topics/t-full", jsonType, []byte(`{"partitions":2}`))
	d.expect(http.StatusBadRequest, http.MethodPatch, "/v1/topics/t-full", jsonType, []byte(`{"name":"other"}`))
	d.expect(http.StatusBadRequest, http.MethodPatch, "/v1/topics/t-full", jsonType, []byte(`{"visibility_timeout_ms":0}`))
	d.expect(http.StatusNotFound, http.MethodPatch, "/v1/topics/nope", jsonType, []byte(`{"retention_ms":1}`))
	if got := d.getTopic("t-full"); got.Partitions != 5 || got.RetentionMs != 60000 {
		t.Errorf("refused patches changed the topic: %+v", got)
	}

	testListTopics(d)
}

func sameTopic(a, b topicJSON) bool {
	a.PartitionStats, b.PartitionStats = nil, nil
	return a.Name == b.Name && a.ID == b.ID && a.Partitions == b.Partitions && a.RetentionMs == b.RetentionMs &&
		a.VisibilityTimeoutMs == b.VisibilityTimeoutMs && a.MaxInFlightPerPartition == b.MaxInFlightPerPartition &&
		a.CreatedAt == b.CreatedAt
}

// testListTopics walks the topic list two at a time and checks it against one page.
func testListTopics(d *testDaemon) {
	t := d.t
	for i := range 5 {
		d.createTopic(fmt.Sprintf(`{"name":"list-%d"}`, i))
	}
	var whole struct {
		Topics        []topicJSON `json:"topics"`
		NextPageToken string      `json:"next_page_token"`
	}
	mustDecode(t, d.expect(http.StatusOK, http.MethodGet, "/v1/topics?limit=1000", nil, nil).body, &whole)
	if whole.NextPageToken != "" {
		t.Fatalf("one page of 1000: next_page_token %q, want \"\"", whole.NextPageToken)
	}
	var all []string
	for _, tp := range whole.Topics {
		all = append(all, tp.Name)
	}
	if !slices.IsSorted(all) || !slices.Contains(all, "list-4") || !slices.Contains(all, "t-full") {
		t.Fatalf("list: %q", all)
	}
	var paged []string
	token, pages := "", 0
	for {
		pages++
		if pages > len(all) {
			t.Fatalf("more than %d pages of 2", len(all))
		}
		path := "/v1/topics?limit=2"
		if token != "" {
			path += "&page_token=" + token
		}
		var page struct {
			Topics        []topicJSON `json:"topics"`
			NextPageToken string      `json:"next_page_token"`
		}
		mustDecode(t, d.expect(http.StatusOK, http.MethodGet, path, nil, nil).body, &page)
		if len(page.Topics) > 2 {
			t.Fatalf("limit=2 gave %d topics", len(page.Topics))
		}
		for _, tp := range page.Topics {
			paged = append(paged, tp.Name)
		}
		if token = page.NextPageToken; token == "" {
			break
		}
	}
	if !slices.Equal(paged, all) {
		t.Fatalf("pages of 2: %q, want %q", paged, all)
	}
	d.expect(http.StatusBadRequest, http.MethodGet, "/v1/topics?limit=0", nil, nil)
	d.expect(http.StatusBadRequest, http.MethodGet, "/v1/topics?limit=x", nil, nil)
	d.expect(http.StatusBadRequest, http.MethodGet, "/v1/topics?page_token=%21%21", nil, nil)
}

func testProduce(d *testDaemon) {
	t := d.t
	d.createTopic(`{"name":"p"}`)
	accepted := uint64(0)
	ok := func(header map[string]string, query, body string) {
		t.Helper()
		path := "/v1/topics/p/produce"
		if query != "" {
			path += "?" + query
		}
		r := d.expect(http.StatusAccepted, http.MethodPost, path, header, []byte(body))
		if len(r.body) != 0 {
			t.Errorf("202 with a body: %q", r.body)
		}
		accepted++
	}
	ok(octet, "", "raw bytes")
	ok(map[string]string{"Content-Type": "application/json; charset=utf-8"}, "", `{"json":true}`)
	ok(map[string]string{"X-Narad-Client": "e2e"}, "", "no content type, a client header")
	ok(map[string]string{"X-Narad-Client": "e2e", "Content-Type": "text/plain"}, "", "a client header wins")
	ok(octet, "partition=2", "pinned")
	ok(octet, "key=k1", "keyed")
	ok(octet, "key=&partition=0", "empty key, pinned")

	refuse := func(status int, header map[string]string, path string, body []byte) {
		t.Helper()
		d.expect(status, http.MethodPost, path, header, body)
	}
	refuse(http.StatusBadRequest, octet, "/v1/topics/p/produce", nil)                            // empty body
	refuse(http.StatusBadRequest, octet, "/v1/topics/p/produce?partition=3", []byte("x"))        // out of range
	refuse(http.StatusBadRequest, octet, "/v1/topics/p/produce?partition=99&key=k", []byte("x")) // out of range
	refuse(http.StatusBadRequest, octet, "/v1/topics/p/produce?partition=-1", []byte("x"))       // malformed
	refuse(http.StatusBadRequest, octet, "/v1/topics/p/produce?partition=one", []byte("x"))      // malformed
	refuse(http.StatusBadRequest, octet, "/v1/topics/p/produce?key=%zz", []byte("x"))            // malformed
	refuse(http.StatusBadRequest, octet, "/v1/topics/p/produce?key="+longKey(), []byte("x"))     // key over 4 KiB
	refuse(http.StatusBadRequest, octet, "/v1/topics/b%24d/produce", []byte("x"))                // bad topic name
	refuse(http.StatusNotFound, octet, "/v1/topics/no-such-topic/produce", []byte("x"))          // unknown topic
	refuse(http.StatusUnsupportedMediaType, nil, "/v1/topics/p/produce", []byte("x"))            // no Content-Type
	refuse(http.StatusUnsupportedMediaType, map[string]string{"Content-Type": "text/plain"}, "/v1/topics/p/produce", []byte("x"))
	refuse(http.StatusRequestEntityTooLarge, octet, "/v1/topics/p/produce", make([]byte, 1<<20+1)) // over 1 MiB
	// A chunked body (no Content-Length) over 1 MiB is cut off while it is read.
	req, err := http.NewRequest(http.MethodPost, d.base+"/v1/topics/p/produce", struct{ *bytes.Reader }{bytes.NewReader(make([]byte, 1<<20+1))})
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	if r, err := d.send(req); err != nil || r.status != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked body over 1 MiB: %v %v, want 413", r, err)
	}

	big := bytes.Repeat([]byte{0xfe}, 1<<20) // exactly 1 MiB, not UTF-8
	ok(octet, "partition=1", string(big))
	d.waitCommitted("p", accepted)

	// Every 202 is stored, byte for byte, and none of the refused requests is.
	var msgs []messageJSON
	for len(msgs) < int(accepted) {
		got := d.consumeMany("p", "max=100&wait=5s")
		msgs = append(msgs, got...)
	}
	d.expect(http.StatusNoContent, http.MethodGet, "/v1/topics/p/consume", nil, nil)
	seen := map[string]messageJSON{}
	for _, m := range msgs {
		var p []byte
		switch m.PayloadEncoding {
		case "base64":
			p = decodeB64String(t, m.Payload)
		case "":
			if json.Valid(m.Payload) && m.Payload[0] != '"' {
				p = m.Payload
			} else {
				p = []byte(m.text(t))
			}
		}
		seen[string(p)] = m
		d.ack(http.StatusNoContent, "p", m.ReceiptHandle, "")
	}
	for _, want := range []string{"raw bytes", `{"json":true}`, "no content type, a client header", "a client header wins",
		"pinned", "keyed", "empty key, pinned", string(big)} {
		if _, ok := seen[want]; !ok {
			t.Errorf("payload %.40q was answered 202 but not delivered", want)
		}
	}
	if len(seen) != int(accepted) {
		t.Errorf("delivered %d distinct payloads, want %d", len(seen), accepted)
	}
	if m := seen["pinned"]; m.Partition != 2 {
		t.Errorf("partition=2 landed in %d", m.Partition)
	}
	if m := seen["keyed"]; m.Key == nil || *m.Key != "k1" {
		t.Errorf("keyed message: key %v", m.Key)
	}
	if m := seen["empty key, pinned"]; m.Partition != 0 || m.Key == nil || *m.Key != "" {
		t.Errorf("empty key, partition 0: %+v", m)
	}
	if m := seen[string(big)]; m.PayloadEncoding != "base64" || m.Partition != 1 {
		t.Errorf("1 MiB binary payload: encoding %q partition %d", m.PayloadEncoding, m.Partition)
	}
	if m := seen[`{"json":true}`]; string(m.Payload) != `{"json":true}` {
		t.Errorf("JSON payload not verbatim: %s", m.Payload)
	}
	testProducePartitionChoice(d)
}

func longKey() string { return strings.Repeat("k", 4<<10+1) }

// testProducePartitionChoice: a key always picks the same partition, partition wins over
// key, and neither goes round-robin over every partition.
func testProducePartitionChoice(d *testDaemon) {
	t := d.t
	d.createTopic(`{"name":"route","partitions":4}`)
	for range 4 {
		d.produce(http.StatusAccepted, "route", "key=alpha", []byte("alpha"))
	}
	for range 4 {
		d.produce(http.StatusAccepted, "route", "", []byte("rr"))
	}
	d.waitCommitted("route", 8)
	msgs := d.consumeMany("route", "max=100")
	if len(msgs) != 8 {
		t.Fatalf("consumed %d of 8", len(msgs))
	}
	alpha := map[uint32]bool{}
	rr := map[uint32]int{}
	for _, m := range msgs {
		if m.text(t) == "alpha" {
			alpha[m.Partition] = true
		} else {
			rr[m.Partition]++
		}
	}
	if len(alpha) != 1 {
		t.Errorf("key alpha spread over partitions %v", alpha)
	}
	if len(rr) != 4 {
		t.Errorf("round-robin over 4 partitions used %v", rr)
	}
	var ap uint32
	for p := range alpha {
		ap = p
	}
	other := (ap + 1) % 4
	d.produce(http.StatusAccepted, "route", fmt.Sprintf("key=alpha&partition=%d", other), []byte("pinned alpha"))
	if m := d.consumeOne("route", "wait=5s"); m.text(t) != "pinned alpha" || m.Partition != other {
		t.Errorf("partition=%d with key alpha: %+v", other, m)
	}
}

func decodeB64String(t *testing.T, raw json.RawMessage) []byte {
	t.Helper()
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("base64 payload %s: %v", raw, err)
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("base64 payload %s: %v", raw, err)
	}
	return b
}

func testProduceBatch(d *testDaemon) {
	t := d.t
	d.createTopic(`{"name":"b","partitions":2}`)
	path := "/v1/topics/b/produce/batch"
	r := d.expect(http.StatusAccepted, http.MethodPost, path, jsonType, []byte(`{"messages":[
		{"payload":{"k":[1,2]}},
		{"payload":"aGVsbG8=","payload_encoding":"base64","key":"user","partition":1},
		{"payload":"text","key":"//4=","key_encoding":"base64","partition":0},
		{"payload":123,"partition":0}]}`))
	if string(r.body) != `{"accepted":4}` || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("batch: %v", r)
	}
	d.waitCommitted("b", 4)
	msgs := d.consumeMany("b", "max=10")
	byPayload := map[string]messageJSON{}
	for _, m := range msgs {
		byPayload[string(m.Payload)] = m
		d.ack(http.StatusNoContent, "b", m.ReceiptHandle, "")
	}
	if len(byPayload) != 4 {
		t.Fatalf("consumed %d distinct of 4: %+v", len(byPayload), msgs)
	}
	if m, ok := byPayload[`{"k":[1,2]}`]; !ok || m.Key != nil {
		t.Errorf("JSON object payload: %+v", m)
	}
	if m, ok := byPayload[`"hello"`]; !ok || m.Partition != 1 || m.Key == nil || *m.Key != "user" {
		t.Errorf("base64 payload \"hello\" with key user in partition 1: %+v", byPayload)
	}
	if m, ok := byPayload[`"text"`]; !ok || m.KeyEncoding != "base64" || *m.Key != "//4=" || m.Partition != 0 {
		t.Errorf("a JSON string payload is its text, quotes included; binary key in base64: %+v", m)
	}
	if _, ok := byPayload[`123`]; !ok {
		t.Errorf("number payload: %+v", byPayload)
	}

	// All or nothing: one bad message refuses the whole batch, with its index.
	for body, prefix := range map[string]string{
		`{"messages":[{"payload":1},{"payload":2,"partition":7}]}`:                               "message 1: ",
		`{"messages":[{"payload":"!!","payload_encoding":"base64"},{"payload":2}]}`:              "message 0: ",
		`{"messages":[{"payload":1},{"payload":1},{"payload":1,"partition":-1}]}`:                "message 2: ",
		`{"messages":[{"payload":1},{"payload":"x","payload_encoding":"gzip"}]}`:                 "message 1: ",
		`{"messages":[{"payload":1},{"key_encoding":"base64","payload":1}]}`:                     "message 1: ",
		`{"messages":[{"payload":1},{"payload":"` + longKey() + `","key":"` + longKey() + `"}]}`: "message 1: ",
	} {
		r := d.expect(http.StatusBadRequest, http.MethodPost, path, jsonType, []byte(body))
		if msg := wantErrorBody(t, r); !strings.HasPrefix(msg, prefix) {
			t.Errorf("batch %.60s: error %q, want the prefix %q", body, msg, prefix)
		}
	}
	for _, body := range []string{``, `{}`, `{"messages":[]}`, `{"messages":[{}]}`, `{"messages":[{"payload":1,"colour":1}]}`,
		`{"messages":[{"payload":1}],"extra":1}`, `[1]`, manyMessages(1001)} {
		d.expect(http.StatusBadRequest, http.MethodPost, path, jsonType, []byte(body))
	}
	d.expect(http.StatusNotFound, http.MethodPost, "/v1/topics/nope/produce/batch", jsonType, []byte(`{"messages":[{"payload":1}]}`))
	d.expect(http.StatusRequestEntityTooLarge, http.MethodPost, path, jsonType, make([]byte, 16<<20+1))
	d.expect(http.StatusNoContent, http.MethodGet, "/v1/topics/b/consume", nil, nil) // nothing of the refused batches

	// API.md: one WAL group commit for the batch (nothing else appends to the WAL here).
	d.createTopic(`{"name":"b-1000","partitions":1}`)
	before := string(d.expect(http.StatusOK, http.MethodGet, "/metrics", nil, nil).body)
	r = d.expect(http.StatusAccepted, http.MethodPost, "/v1/topics/b-1000/produce/batch", jsonType, []byte(manyMessages(1000)))
	if string(r.body) != `{"accepted":1000}` {
		t.Fatalf("batch of 1000: %v", r)
	}
	after := string(d.expect(http.StatusOK, http.MethodGet, "/metrics", nil, nil).body)
	if got := metricValue(t, after, "narad_wal_records_total") - metricValue(t, before, "narad_wal_records_total"); got != 1000 {
		t.Errorf("a batch of 1000 made %v WAL records durable", got)
	}
	// API.md: one WAL group commit for the batch (the node stages all of it before the
	// WAL may start a write).
	if groups := metricValue(t, after, "narad_wal_fsyncs_total") - metricValue(t, before, "narad_wal_fsyncs_total"); groups != 1 {
		t.Errorf("a batch of 1000 took %v WAL group commits, want 1", groups)
	}
	d.waitCommitted("b-1000", 1000)
}

func manyMessages(n int) string {
	var b strings.Builder
	b.WriteString(`{"messages":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"payload":%d}`, i)
	}
	b.WriteString(`]}`)
	return b.String()
}

// testDeleteRecreate: a deleted topic is gone from every route; a topic created again
// under its name is a new incarnation that holds none of the old records.
func testDeleteRecreate(d *testDaemon) {
	t := d.t
	old := d.createTopic(`{"name":"d","partitions":2}`)
	for i := range 4 {
		d.produce(http.StatusAccepted, "d", "", fmt.Appendf(nil, "old-%d", i))
	}
	d.waitCommitted("d", 4)
	leased := d.consumeOne("d", "")
	d.expect(http.StatusNoContent, http.MethodDelete, "/v1/topics/d", nil, nil)
	d.expect(http.StatusNotFound, http.MethodGet, "/v1/topics/d", nil, nil)
	d.expect(http.StatusNotFound, http.MethodDelete, "/v1/topics/d", nil, nil)
	d.expect(http.StatusNotFound, http.MethodPatch, "/v1/topics/d", jsonType, []byte(`{"partitions":3}`))
	d.produce(http.StatusNotFound, "d", "", []byte("x"))
	d.expect(http.StatusNotFound, http.MethodPost, "/v1/topics/d/produce/batch", jsonType, []byte(`{"messages":[{"payload":1}]}`))
	d.expect(http.StatusNotFound, http.MethodGet, "/v1/topics/d/consume", nil, nil)
	d.expect(http.StatusNotFound, http.MethodPost, "/v1/topics/d/ack?receipt_handle="+leased.ReceiptHandle, nil, nil)
	var list struct {
		Topics        []topicJSON `json:"topics"`
		NextPageToken string      `json:"next_page_token"`
	}
	mustDecode(t, d.expect(http.StatusOK, http.MethodGet, "/v1/topics?limit=1000", nil, nil).body, &list)
	for _, tp := range list.Topics {
		if tp.Name == "d" {
			t.Fatalf("deleted topic still listed")
		}
	}

	fresh := d.createTopic(`{"name":"d","partitions":2}`)
	if fresh.ID == old.ID {
		t.Fatalf("recreated topic has the old id %d", old.ID)
	}
	for _, ps := range d.getTopic("d").PartitionStats {
		if ps.HighWatermark != 0 || ps.InFlight != 0 {
			t.Errorf("recreated topic's partition %d: %+v", ps.Index, ps)
		}
	}
	d.expect(http.StatusNoContent, http.MethodGet, "/v1/topics/d/consume?max=100", nil, nil)
	d.ack(http.StatusGone, "d", leased.ReceiptHandle, "") // the old incarnation's lease
	d.produce(http.StatusAccepted, "d", "", []byte("new"))
	d.waitCommitted("d", 1)
	ms := d.consumeMany("d", "max=100")
	if len(ms) != 1 || ms[0].text(t) != "new" {
		t.Fatalf("recreated topic delivered %+v, want only the new record", ms)
	}
}

// testMetrics checks that /metrics carries the families an operator watches, with the
// traffic of the subtests before in them.
func testMetrics(d *testDaemon) {
	t := d.t
	body := string(d.expect(http.StatusOK, http.MethodGet, "/metrics", nil, nil).body)
	for _, family := range []string{
		"# TYPE narad_wal_fsync_seconds histogram",
		"# TYPE narad_wal_records_per_fsync gauge",
		"# TYPE narad_wal_fsyncs_total counter",
		"# TYPE narad_dispatcher_backlog_records gauge",
		"# TYPE narad_partition_commit_seconds histogram",
		"# TYPE narad_partition_fsync_seconds histogram",
		"# TYPE narad_leases_in_flight gauge",
		"# TYPE narad_produced_messages_total counter",
		"# TYPE narad_consumed_messages_total counter",
		"# TYPE narad_http_requests_total counter",
		"# TYPE narad_http_request_duration_seconds histogram",
		"# TYPE go_goroutines gauge",
	} {
		if !strings.Contains(body, family+"\n") {
			t.Errorf("/metrics has no %q", family)
		}
	}
	for _, sample := range []string{
		`narad_produced_messages_total{topic="p"} 8`,
		`narad_consumed_messages_total{topic="p"} 8`,
		`narad_http_requests_total{route="POST /v1/topics/{topic}/produce",status="202"} `,
		`narad_http_requests_total{route="POST /v1/topics/{topic}/produce",status="415"} 2`,
		`narad_http_requests_total{route="GET /v1/topics/{topic}/consume",status="204"} `,
		`narad_http_requests_total{route="POST /v1/topics/{topic}/ack",status="410"} `,
		`narad_http_requests_total{route="unmatched",status="404"} `,
	} {
		if !strings.Contains(body, "\n"+sample) {
			t.Errorf("/metrics has no sample %q", sample)
		}
	}
	for _, counted := range []string{"narad_wal_fsync_seconds_count", "narad_partition_commit_seconds_count", "narad_wal_fsyncs_total"} {
		if v := metricValue(t, body, counted); v <= 0 {
			t.Errorf("%s = %v after traffic", counted, v)
		}
	}
	if v := metricValue(t, body, "narad_wal_records_per_fsync"); v < 1 {
		t.Errorf("narad_wal_records_per_fsync = %v, want at least 1", v)
	}
	if strings.Contains(body, `topic="d"} 4`) {
		t.Errorf("the deleted incarnation's series survived its delete")
	}
}

// metricValue returns the value of the unlabelled sample name.
func metricValue(t *testing.T, body, name string) float64 {
	t.Helper()
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			var f float64
			if _, err := fmt.Sscan(v, &f); err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	t.Fatalf("/metrics has no sample %s", name)
	return 0
}
