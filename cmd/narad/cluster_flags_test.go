package main

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"
)

const peers3 = "1=127.0.0.1:7001,2=127.0.0.1:7002,3=127.0.0.1:7003"

func TestClusterFlags(t *testing.T) {
	t.Setenv("NARAD_CLUSTER_SECRET", "")
	cfg, err := parseServeFlags([]string{"-id", "2", "-addr", "127.0.0.1:7002", "-peers", peers3,
		"-cluster-secret", clusterSecret}, io.Discard)
	if err != nil || cfg.id != 2 || len(cfg.peers) != 3 || cfg.peers[3] != "127.0.0.1:7003" || string(cfg.secret) != clusterSecret ||
		cfg.nodeID != "2" || !slices.Equal(cfg.voters(), []uint64{1, 2, 3}) || cfg.advertised("127.0.0.1:7002") != "127.0.0.1:7002" {
		t.Fatalf("flags: %+v %v", cfg, err)
	}
	// From the environment; this node not in -peers: it joins (a learner, not a voter),
	// and it advertises the address it listens on, or -advertise.
	t.Setenv("NARAD_ID", "4")
	t.Setenv("NARAD_PEERS", peers3)
	t.Setenv("NARAD_CLUSTER_SECRET", clusterSecret)
	cfg, err = parseServeFlags([]string{"-addr", "127.0.0.1:0", "-node-id", "four"}, io.Discard)
	if err != nil || cfg.id != 4 || cfg.nodeID != "four" || !slices.Equal(cfg.voters(), []uint64{1, 2, 3}) ||
		cfg.advertised("127.0.0.1:4567") != "127.0.0.1:4567" {
		t.Fatalf("from the environment: %+v %v", cfg, err)
	}
	t.Setenv("NARAD_ADVERTISE", "10.0.0.4:7004")
	cfg, err = parseServeFlags([]string{"-addr", ":7004"}, io.Discard)
	if err != nil || cfg.advertised("[::]:7004") != "10.0.0.4:7004" {
		t.Fatalf("advertise: %+v %v", cfg, err)
	}
	// Listening on every interface, a node advertises its own -peers entry.
	t.Setenv("NARAD_ADVERTISE", "")
	cfg, err = parseServeFlags([]string{"-id", "3", "-addr", "0.0.0.0:7003"}, io.Discard)
	if err != nil || cfg.advertised("0.0.0.0:7003") != "127.0.0.1:7003" {
		t.Fatalf("advertise from -peers: %+v %v", cfg, err)
	}
	// Without -peers: a cluster of one, as before (no secret needed, the host name).
	t.Setenv("NARAD_PEERS", "")
	t.Setenv("NARAD_ID", "")
	cfg, err = parseServeFlags(nil, io.Discard)
	if err != nil || cfg.peers != nil || cfg.id != 1 || cfg.nodeID == "1" {
		t.Fatalf("single node: %+v %v", cfg, err)
	}
}

// Bad cluster flags are usage errors (status 2) that say what is wrong.
func TestClusterFlagErrors(t *testing.T) {
	t.Setenv("NARAD_CLUSTER_SECRET", "")
	secret := []string{"-cluster-secret", clusterSecret}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-id", "0"}, "bad id"},
		{[]string{"-id", "x"}, "bad id"},
		{[]string{"-peers", peers3}, "needs the cluster secret"},
		{[]string{"-peers", peers3, "-cluster-secret", "short"}, "at least 16"},
		{append([]string{"-peers", "1=127.0.0.1:7001,1=127.0.0.1:7002"}, secret...), "listed twice"},
		{append([]string{"-peers", "1=127.0.0.1"}, secret...), "bad peers"},
		{append([]string{"-peers", "0=127.0.0.1:1"}, secret...), "bad peers"},
		{append([]string{"-peers", "1=127.0.0.1:0"}, secret...), "bad peers"},
		{append([]string{"-peers", "1=0.0.0.0:7001"}, secret...), "unspecified"},
		{append([]string{"-peers", "2=127.0.0.1:7002", "-addr", ":7001"}, secret...), "give -advertise"},
		{append([]string{"-peers", peers3, "-advertise", "127.0.0.9:7001"}, secret...), "wrong one"},
		{[]string{"-advertise", "127.0.0.1"}, "bad advertise"},
	} {
		var stderr bytes.Buffer
		if got := run(append([]string{"serve"}, c.args...), io.Discard, &stderr, nil); got != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("serve %q: status %d, %q; want 2 and %q", c.args, got, stderr.String(), c.want)
		}
	}
}
