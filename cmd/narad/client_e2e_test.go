package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/narad/narad/client"
)

// clientOf is the client package's Client of addrs with user's credentials.
func clientOf(t *testing.T, addrs []string, user, password string) *client.Client {
	t.Helper()
	c, err := client.New(addrs, client.WithBasicAuth(user, password))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// clientMessages consumes from topic until want messages came (each lease kept), within
// startBound.
func clientMessages(t *testing.T, c *client.Client, topic string, want int, part *uint32) []client.Message {
	t.Helper()
	var got []client.Message
	eventually(t, startBound, fmt.Sprintf("%d messages consumed from %s", want, topic), func() bool {
		ms, err := c.Consume(context.Background(), topic, client.ConsumeOptions{Max: 100, Wait: 200 * time.Millisecond, Partition: part})
		if err != nil {
			t.Fatalf("consume %s: %v", topic, err)
		}
		got = append(got, ms...)
		return len(got) >= want
	})
	if len(got) != want {
		t.Fatalf("consumed %d messages of %s, want %d", len(got), topic, want)
	}
	return got
}

func clientMessagesAndLeases(t *testing.T, d *testDaemon) {
	ctx := context.Background()
	c := clientOf(t, []string{d.addr}, "admin", testAdminPassword)
	if _, err := c.CreateTopic(ctx, client.TopicConfig{Name: "cl", Partitions: client.Ptr[uint32](2)}); err != nil {
		t.Fatal(err)
	}
	binKey, binPayload := "\xff\xfe", []byte{0xff, 0x00, 0x01}
	n, err := c.ProduceBatch(ctx, "cl", []client.BatchMessage{
		{Payload: binPayload, Key: &binKey, Partition: client.Ptr[uint32](0)},
		{Payload: []byte(`{"a":1}`), Key: client.Ptr("k"), Partition: client.Ptr[uint32](1)},
		{Payload: []byte("plain"), Partition: client.Ptr[uint32](0)},
	})
	if err != nil || n != 3 {
		t.Fatalf("batch produce: %d %v", n, err)
	}
	if err := c.Produce(ctx, "cl", []byte("single"), client.WithPartition(1)); err != nil {
		t.Fatal(err)
	}
	d.waitCommitted("cl", 4)
	m, err := c.Replay(ctx, "cl", 0, 0)
	if err != nil || m == nil || !bytes.Equal(m.Payload, binPayload) || string(m.Key) != binKey || !m.Base64 ||
		m.ReceiptHandle != "" {
		t.Fatalf("replay of a binary record: %+v %v", m, err)
	}
	if m, err := c.Replay(ctx, "cl", 0, 99); m != nil || err != nil {
		t.Fatalf("replay past the end: %+v %v", m, err)
	}
	got := clientMessages(t, c, "cl", 4, nil)
	byText := map[string]client.Message{}
	for _, m := range got {
		byText[string(m.Payload)] = m
	}
	if string(byText[`{"a":1}`].Key) != "k" || byText["plain"].Key != nil || byText["single"].Partition != 1 {
		t.Fatalf("consumed %+v", got)
	}
	res, err := c.AckBatch(ctx, "cl", []string{byText["plain"].ReceiptHandle, byText[`{"a":1}`].ReceiptHandle}, client.Settle)
	if err != nil || len(res) != 2 || res[0].Err != nil || res[1].Status != 204 {
		t.Fatalf("batch ack: %+v %v", res, err)
	}
	if err := c.Ack(ctx, "cl", byText["plain"].ReceiptHandle); !errors.Is(err, client.ErrGone) {
		t.Fatalf("second ack: %v, want ErrGone", err)
	}
	res, err = c.AckBatch(ctx, "cl", []string{byText["plain"].ReceiptHandle}, client.Extend)
	if err != nil || !errors.Is(res[0].Err, client.ErrGone) {
		t.Fatalf("batch extend of a settled lease: %+v %v", res, err)
	}
	if err := c.Extend(ctx, "cl", byText["single"].ReceiptHandle); err != nil {
		t.Fatal(err)
	}
	if err := c.Nack(ctx, "cl", byText[string(binPayload)].ReceiptHandle); err != nil {
		t.Fatal(err)
	}
	again := clientMessages(t, c, "cl", 1, nil)
	if !bytes.Equal(again[0].Payload, binPayload) {
		t.Fatalf("after the nack: %+v", again)
	}
	if _, err := c.AckBatch(ctx, "cl", []string{again[0].ReceiptHandle, byText["single"].ReceiptHandle}, client.Settle); err != nil {
		t.Fatal(err)
	}
	clientErrors(t, c)
}

// clientErrors: each error status comes as its sentinel.
func clientErrors(t *testing.T, c *client.Client) {
	ctx := context.Background()
	for _, e := range []struct {
		err  error
		want error
	}{
		{c.Produce(ctx, "cl", nil), client.ErrBadRequest},
		{c.Produce(ctx, "nope", []byte("x")), client.ErrNotFound},
		{c.Produce(ctx, "cl", make([]byte, client.MessageBytesMax+1)), client.ErrTooLarge},
		{c.Produce(ctx, "cl", []byte("x"), client.WithPartition(7)), client.ErrBadRequest},
		{c.Ack(ctx, "cl", "not-a-handle"), client.ErrGone},
	} {
		if !errors.Is(e.err, e.want) {
			t.Errorf("got %v, want %v", e.err, e.want)
		}
	}
	_, err := c.CreateTopic(ctx, client.TopicConfig{Name: "cl"})
	var ae *client.Error
	if !errors.As(err, &ae) || ae.Status != 409 || ae.Message == "" || !errors.Is(err, client.ErrConflict) {
		t.Errorf("create of an existing topic: %v", err)
	}
	anon, err := client.New([]string{c.Nodes()[0]})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := anon.ListTopics(ctx); !errors.Is(err, client.ErrUnauthorized) {
		t.Errorf("no credentials: %v", err)
	}
}

func clientConsumer(t *testing.T, d *testDaemon) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := clientOf(t, []string{d.addr}, "admin", testAdminPassword)
	if _, err := c.CreateTopic(ctx, client.TopicConfig{Name: "jobs", Partitions: client.Ptr[uint32](2)}); err != nil {
		t.Fatal(err)
	}
	const n = 20
	batch := make([]client.BatchMessage, n)
	for i := range batch {
		batch[i].Payload = fmt.Appendf(nil, "job-%d", i)
	}
	if _, err := c.ProduceBatch(ctx, "jobs", batch); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]int{}
	done := make(chan struct{})
	cons := &client.Consumer{Client: c, Topic: "jobs", Max: 7, Wait: 500 * time.Millisecond,
		Handler: func(_ context.Context, m client.Message) error {
			mu.Lock()
			defer mu.Unlock()
			seen[string(m.Payload)]++
			if string(m.Payload) == "job-3" && seen["job-3"] == 1 {
				return errors.New("fails once: nacked") // delivered again
			}
			if acked := len(seen); acked == n && seen["job-3"] == 2 {
				close(done)
			}
			return nil
		}}
	ran := make(chan error, 1)
	go func() { ran <- cons.Run(ctx) }()
	select {
	case <-done:
	case err := <-ran:
		t.Fatalf("Consumer.Run returned early: %v", err)
	case <-time.After(startBound):
		t.Fatalf("the consumer saw %d of %d jobs", len(seen), n)
	}
	cancel()
	if err := <-ran; err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
	if ms, err := c.Consume(context.Background(), "jobs", client.ConsumeOptions{Max: 100}); err != nil || len(ms) != 0 {
		t.Fatalf("left after the consumer acked every job: %d %v", len(ms), err)
	}
	bad := &client.Consumer{Client: c, Topic: "nope", Handler: func(context.Context, client.Message) error { return nil }}
	if err := bad.Run(context.Background()); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("a consumer of a missing topic: %v, want ErrNotFound", err)
	}
}

func clientAdmin(t *testing.T, d *testDaemon) {
	ctx := context.Background()
	c := clientOf(t, []string{d.addr}, "admin", testAdminPassword)
	if _, err := c.CreateTopic(ctx, client.TopicConfig{Name: "adm", RetentionMs: client.Ptr[int64](0)}); err != nil {
		t.Fatal(err)
	}
	tp, err := c.PatchTopic(ctx, "adm", client.TopicPatch{Partitions: client.Ptr[uint32](4)})
	if err != nil || tp.Partitions != 4 || tp.RetentionMs != 0 {
		t.Fatalf("patch: %+v %v", tp, err)
	}
	if tp, err := c.GetTopic(ctx, "adm"); err != nil || len(tp.PartitionStats) != 4 {
		t.Fatalf("get: %+v %v", tp, err)
	}
	ts, err := c.ListTopics(ctx)
	if err != nil || len(ts) < 1 {
		t.Fatalf("list: %v %v", ts, err)
	}
	u, err := c.CreateUser(ctx, "cu", "a-long-password", []client.Grant{{Action: "consume", Patterns: []string{"adm"}}})
	if err != nil || u.Username != "cu" || len(u.Grants) != 1 {
		t.Fatalf("create user: %+v %v", u, err)
	}
	cu := clientOf(t, []string{d.addr}, "cu", "a-long-password")
	if err := cu.Produce(ctx, "adm", []byte("x")); !errors.Is(err, client.ErrForbidden) {
		t.Fatalf("produce without the grant: %v", err)
	}
	if u, err := c.SetGrants(ctx, "cu", []client.Grant{{Action: "produce", Patterns: []string{"ad*"}}}); err != nil ||
		u.Grants[0].Action != "produce" {
		t.Fatalf("set grants: %+v %v", u, err)
	}
	if err := cu.Produce(ctx, "adm", []byte("x")); err != nil {
		t.Fatalf("produce with the grant: %v", err)
	}
	if err := c.SetPassword(ctx, "cu", "another-password", ""); err != nil {
		t.Fatal(err)
	}
	if us, err := c.ListUsers(ctx); err != nil || len(us) < 2 {
		t.Fatalf("list users: %v %v", us, err)
	}
	if err := c.DeleteUser(ctx, "cu"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetUser(ctx, "cu"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("deleted user: %v", err)
	}
	if err := c.DeleteTopic(ctx, "adm"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetTopic(ctx, "adm"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("deleted topic: %v", err)
	}
	clientCluster(t, c)
}

// clientCluster: the cluster routes on a cluster of one.
func clientCluster(t *testing.T, c *client.Client) {
	ctx := context.Background()
	ms, err := c.Members(ctx)
	if err != nil || len(ms) != 1 || !ms[0].Leader || ms[0].Status != "alive" {
		t.Fatalf("members: %+v %v", ms, err)
	}
	if mv, err := c.Moves(ctx); err != nil || len(mv) != 0 {
		t.Fatalf("moves: %+v %v", mv, err)
	}
	if err := c.Rebalance(ctx); err != nil {
		t.Fatalf("rebalance: %v", err)
	}
	if dec, err := c.Decommission(ctx, ms[0].ID, true); err != nil || dec.Allowed == nil || *dec.Allowed {
		t.Fatalf("decommission dry run of the only member: %+v %v", dec, err)
	}
	for _, e := range []struct {
		err  error
		want error
	}{
		{c.CancelDecommission(ctx, ms[0].ID), client.ErrConflict},
		{c.StartMove(ctx, "cl", 0, 9), client.ErrNotFound},
		{c.AbortMove(ctx, "cl", 0), client.ErrNotFound},
		{second(c.Forget(ctx, 9, true)), client.ErrNotFound},
		{second(c.Forget(ctx, ms[0].ID, true)), client.ErrConflict},
	} {
		if !errors.Is(e.err, e.want) {
			t.Errorf("got %v, want %v", e.err, e.want)
		}
	}
	if err := c.Ready(ctx); err != nil {
		t.Fatalf("ready: %v", err)
	}
}

func second[T any](_ T, err error) error { return err }
