package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Routes: -route spread (the default) sends worker i's produces to address i mod n, and
// the node that takes a message picks its partition and hands it to the partition's owner
// over the cluster's QUIC links. -route owner is what a client that knows the owners does
// (a Kafka producer, which sends to the partition leader): before the run it reads which
// member owns each partition (GET /v1/topics/{topic}, owner_node: the member id, or a
// single node's configured name) and where each member serves (GET /v1/cluster/members,
// addr; an admin route), and pins worker i to partition i mod P, sent to that
// partition's owner with ?partition=P. The owner's dispatcher then commits locally.
// In the latency mode the consumers are pinned the same way (consumer i to partition i mod
// P at its owner), so no consume is spread over the members either.
const (
	routeSpread = "spread"
	routeOwner  = "owner"
)

// ownerTargets returns one produce target per partition of c.topic, each on the owner's
// address and pinned to its partition, in partition order. Every owner must be a member
// with a loopback address.
func ownerTargets(ctx context.Context, c config) ([]*target, error) {
	client := newClient(1)
	defer client.CloseIdleConnections()
	gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	base := "http://" + c.addrs[0]
	var topic struct {
		Stats []struct {
			Index int    `json:"index"`
			Owner string `json:"owner_node"`
		} `json:"partition_stats"`
	}
	if err := getJSON(gctx, client, base+"/v1/topics/"+url.PathEscape(c.topic), &topic); err != nil {
		return nil, err
	}
	var members struct {
		Members []struct {
			ID   uint64 `json:"id"`
			Addr string `json:"addr"`
		} `json:"members"`
	}
	if err := getJSON(gctx, client, base+"/v1/cluster/members", &members); err != nil {
		return nil, err
	}
	addrOf := make(map[string]string, len(members.Members))
	for _, m := range members.Members {
		addrOf[strconv.FormatUint(m.ID, 10)] = m.Addr
	}
	targets := make([]*target, len(topic.Stats))
	for i, s := range topic.Stats {
		addr, ok := addrOf[s.Owner]
		if !ok && len(members.Members) == 1 { // a single node names itself as configured
			addr, ok = members.Members[0].Addr, true
		}
		if s.Index != i || !ok {
			return nil, fmt.Errorf("-route owner: partition %d has no known owner (%q)", i, s.Owner)
		}
		if err := checkLoopback(addr); err != nil {
			return nil, fmt.Errorf("-route owner: partition %d's owner %s: %w", i, s.Owner, err)
		}
		t := newTarget(addr, c.topic)
		t.pin = "partition=" + strconv.Itoa(i)
		t.produce += "?" + t.pin
		targets[i] = t
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("-route owner: topic %q lists no partitions", c.topic)
	}
	return targets, nil
}

// getJSON GETs u and decodes a 200's JSON body into v.
func getJSON(ctx context.Context, client *http.Client, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", "narad-bench")
	setCredentials(req)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %d: %s", u, resp.StatusCode, oneLine(string(body), 300))
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	return nil
}

// validRoute checks -route against the mode: only single produces can be pinned.
func validRoute(c *config) error {
	switch {
	case c.route != routeSpread && c.route != routeOwner:
		return fmt.Errorf("-route %q: want %s or %s", c.route, routeSpread, routeOwner)
	case c.route == routeOwner && c.mode != modeProduce && c.mode != modeLatency:
		return fmt.Errorf("-route owner: only the %s and %s modes pin partitions", modeProduce, modeLatency)
	}
	return nil
}

// runTargets returns a run's targets, one per address, and those its producers (and the
// latency mode's consumers) use: the same, or one per partition on its owner with -route
// owner.
func runTargets(ctx context.Context, c config, addrs []string) (spread, pinned []*target, err error) {
	spread = make([]*target, len(addrs))
	for i, a := range addrs {
		spread[i] = newTarget(a, c.topic)
	}
	if c.route != routeOwner {
		return spread, spread, nil
	}
	pinned, err = ownerTargets(ctx, c)
	if err == nil && c.mode == modeLatency && c.consumers < len(pinned) {
		return nil, nil, fmt.Errorf("-route owner: -consumers %d leaves some of the %d partitions unread (consumer i reads partition i mod P)",
			c.consumers, len(pinned))
	}
	return spread, pinned, err
}
