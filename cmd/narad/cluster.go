package main

import (
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/narad/narad/io/nodeshell"
	"github.com/narad/narad/io/peernet"
)

// Cluster mode: with -peers, the node is a member of a cluster. It serves HTTP on TCP at
// -addr and talks to its peers over QUIC on UDP at the same host:port; it is reached at
// its advertised address (-advertise), which is what it heartbeats to the metastore
// leader, what GET /v1/cluster/members shows and what peers dial.

// peersMax bounds the -peers list (the metastore's voters: 3 or 5 in practice).
const peersMax = 64

// clusterFlags are the cluster mode's flags as given, before checking.
type clusterFlags struct {
	id, advertise, peers, secret string
}

// parseCluster checks the cluster flags into cfg. Without -peers the node is a cluster of
// one, as before cluster mode: -id and -advertise still set its member id and the address
// it shows, and the secret is not needed.
func parseCluster(cfg *config, f clusterFlags) error {
	id, err := strconv.ParseUint(f.id, 10, 64)
	if err != nil || id == 0 {
		return fmt.Errorf("bad id %q: want the node's member id, an integer 1 or more", f.id)
	}
	cfg.id = id
	if f.advertise != "" {
		if err := checkHostPort(f.advertise); err != nil {
			return fmt.Errorf("bad advertise address %q: %v", f.advertise, err)
		}
		cfg.advertise = f.advertise
	}
	if f.peers == "" {
		return nil
	}
	if cfg.peers, err = parsePeers(f.peers); err != nil {
		return fmt.Errorf("bad peers %q: %v", f.peers, err)
	}
	switch self, ok := cfg.peers[id]; {
	case len(f.secret) == 0:
		return fmt.Errorf("-peers needs the cluster secret: set NARAD_CLUSTER_SECRET (or -cluster-secret), the same on every node")
	case len(f.secret) < peernet.SecretBytesMin:
		return fmt.Errorf("the cluster secret is %d bytes: it must be at least %d", len(f.secret), peernet.SecretBytesMin)
	case ok && cfg.advertise != "" && self != cfg.advertise:
		return fmt.Errorf("-peers gives node %d the address %s, -advertise %s: peers would dial the wrong one", id, self, cfg.advertise)
	case !ok && cfg.advertise == "" && unspecifiedHost(cfg.addr):
		return fmt.Errorf("-addr %s listens on every interface: give -advertise, the address peers and clients reach this node at", cfg.addr)
	}
	cfg.secret = []byte(f.secret)
	return nil
}

// parsePeers reads "1=host:port,2=host:port,…": the initial voters by member id.
func parsePeers(s string) (map[uint64]string, error) {
	peers := map[uint64]string{}
	for _, entry := range strings.Split(s, ",") {
		idText, addr, ok := strings.Cut(strings.TrimSpace(entry), "=")
		if !ok {
			return nil, fmt.Errorf("entry %q: want ID=HOST:PORT", entry)
		}
		id, err := strconv.ParseUint(idText, 10, 64)
		if err != nil || id == 0 {
			return nil, fmt.Errorf("entry %q: the id must be an integer 1 or more", entry)
		}
		if err := checkHostPort(addr); err != nil {
			return nil, fmt.Errorf("entry %q: %v", entry, err)
		}
		if _, dup := peers[id]; dup {
			return nil, fmt.Errorf("node %d is listed twice", id)
		}
		peers[id] = addr
	}
	if len(peers) > peersMax {
		return nil, fmt.Errorf("%d nodes, at most %d", len(peers), peersMax)
	}
	return peers, nil
}

// checkHostPort accepts an address peers can dial: host:port with a host that is not
// "every interface" and a port from 1 to 65535.
func checkHostPort(addr string) error {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	switch {
	case err != nil || port == 0:
		return fmt.Errorf("port %q: want 1 to 65535", portText)
	case unspecifiedHost(addr):
		return fmt.Errorf("host %q: peers cannot reach an unspecified address", host)
	}
	return nil
}

// unspecifiedHost: addr's host is empty, 0.0.0.0 or :: (every interface).
func unspecifiedHost(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "" || (ip != nil && ip.IsUnspecified())
}

// advertised is the address the node is reached at: -advertise, else its own -peers
// entry, else the address it listens on (listen, the port the kernel chose for :0).
func (c config) advertised(listen string) string {
	if c.advertise != "" {
		return c.advertise
	}
	if a, ok := c.peers[c.id]; ok {
		return a
	}
	return listen
}

// voters are the metastore's initial voters: the -peers ids. A node whose id is not
// among them joins the cluster: the leader adds it as a raft learner once it hears it.
func (c config) voters() []uint64 {
	ids := slices.Collect(maps.Keys(c.peers))
	slices.Sort(ids)
	return ids
}

// openShell opens the node on cfg.data, reached at advertise: a cluster of one, or with
// -peers a member whose transport listens on UDP at listen (the HTTP listener's host:port).
func openShell(cfg config, listen, advertise string, logger *slog.Logger) (*nodeshell.Shell, error) {
	if err := pinMemberID(cfg.data, cfg.id); err != nil {
		return nil, err
	}
	ncfg := cfg.node
	ncfg.NodeID, ncfg.Addr, ncfg.Meta.ID = cfg.nodeID, advertise, cfg.id
	if cfg.peers == nil {
		return nodeshell.OpenWrapped(cfg.data, ncfg, cfg.wrapFS)
	}
	ncfg.Meta.Voters = cfg.voters()
	return nodeshell.OpenCluster(cfg.data, ncfg, nodeshell.Cluster{Listen: listen, Secret: cfg.secret,
		Peers: cfg.peers, Logger: logger})
}
