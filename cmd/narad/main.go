// Command narad is the Narad broker daemon and its command line.
//
//	narad serve [-data DIR] [-addr HOST:PORT] [-log-level LEVEL] [-node-id NAME]
//	            [-produce-inflight-max N] [-produce-local-partitions]
//	            [-id N -peers ID=HOST:PORT,... [-advertise HOST:PORT] [-cluster-secret S]]
//	narad version
//	narad help
//	narad topic|produce|consume|ack|nack|extend|replay|user|cluster|bench|completion ...
//
// The client commands (cli*.go, on github.com/spf13/cobra) talk to the nodes of --url
// through the client package; see cliUsageText for their flags and exit statuses.
//
// serve runs one broker node on the files under the data directory (io/nodeshell: the
// ingress write-ahead log, the metastore replica, the partition logs and the consume
// leases) behind the HTTP API of API.md (io/httpapi): produce, consume and ack, topics,
// /v1/cluster/members, /healthz, /readyz and /metrics. Without -peers the node is a
// cluster of one: it is its own metastore leader and owns every partition. With -peers
// (cluster.go) it is a member of a cluster: it talks to its peers over QUIC (io/peernet) on
// the UDP port of its HTTP host:port, authenticated by the cluster secret. Every /v1
// route and /metrics need HTTP Basic credentials of a user of the metastore (security.go);
// -dev turns that off on a loopback address.
//
// On start the node recovers its logs; /readyz answers 503 until that is done. SIGTERM or
// SIGINT shuts it down cleanly: /healthz and every /v1 route answer 503, requests being
// served finish (a long poll included, within a bound), then the WAL checkpoint and the
// accepted acks are made durable and the files closed. A second signal stops waiting for
// the requests. A fatal node error (a failed fsync, a corrupt log) logs the reason and
// exits with status 1; a restart recovers from the disk. See usageText for the flags.
package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"

	"github.com/narad/narad/core/access"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.0.0-dev"

const usageText = `usage:
  narad serve [flags]   run a broker node (HTTP API over the node's files)
  narad version         print the version
  narad help            print this text

serve flags (each falls back to an environment variable, then to the config file,
then to a default):
  -config FILE              a TOML file whose keys are these flags' names, without the
                            dash (NARAD_CONFIG; see docs/narad.example.toml); an unknown
                            key or a value of the wrong type is an error
  -data DIR                 data directory (NARAD_DATA, default ./data)
  -addr HOST:PORT           HTTP listen address (NARAD_ADDR, default 127.0.0.1:7942)
  -log-level LEVEL          debug, info, warn or error (NARAD_LOG_LEVEL, default info)
  -node-id NAME             node name shown as owner_node (NARAD_NODE_ID, default the
                            host name; in a cluster, the member id)
  -produce-inflight-max N   produce requests served at once; one more is answered 429
                            (NARAD_PRODUCE_INFLIGHT_MAX, default 0: unlimited)
  -produce-local-partitions a message with neither key nor partition goes round-robin
                            over the partitions this member owns (all when it owns
                            none), so it is committed without crossing to another member;
                            producers must spread over the members for every partition
                            to fill (NARAD_PRODUCE_LOCAL_PARTITIONS=1, default off: over
                            every partition)

cluster flags (without -peers the node is a cluster of one):
  -id N                     member id, 1 or more, unique in the cluster and the same for
                            the data directory's whole life (NARAD_ID, default 1)
  -peers ID=HOST:PORT,...   the cluster's initial members (the metastore's voters) and
                            their addresses, this node's included or not; give every
                            initial member the same list (NARAD_PEERS)
  -advertise HOST:PORT      the address peers and clients reach this node at (NARAD_ADVERTISE,
                            default its -peers entry, else the -addr it listens on)
  -cluster-secret S         shared by every member, at least 16 bytes; prefer the
                            environment (NARAD_CLUSTER_SECRET); required with -peers

A member serves HTTP on TCP and talks to its peers over QUIC on UDP, both at the
host:port of -addr.

access control (on by default; see the README's "Access"):
  every /v1 route and /metrics need HTTP Basic credentials of a user; the root user
  admin is made on a new cluster's first start with the password in
  NARAD_ADMIN_PASSWORD (8 to 72 bytes; environment only), or a generated one logged once
  -dev                      security off (NARAD_DEV=1); refused unless -addr is loopback
  -tls-cert FILE -tls-key FILE
                            serve HTTPS (NARAD_TLS_CERT, NARAD_TLS_KEY)
  -metrics-addr HOST:PORT   also serve /metrics there without credentials
                            (NARAD_METRICS_ADDR)

SIGTERM or SIGINT shuts it down cleanly; a second signal stops waiting for requests.
Exit status: 0 after a clean shutdown, 1 when the node failed or could not start, 2 on
a usage error.
`

func main() {
	stop := make(chan os.Signal, 2)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, stop))
}

// run executes the command line args and returns the exit status. A value on stop begins
// a clean shutdown of serve (and ends a client command, such as consume --follow); a
// second one cuts the wait for in-flight requests short. The commands are cli*.go's.
func run(args []string, stdout, stderr io.Writer, stop <-chan os.Signal) int {
	return runCLI(cliEnv{stdin: os.Stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv, stop: stop,
		terminal: isTerminal(stdout)}, args)
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func versionString() string {
	rev := ""
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev = " " + s.Value[:12]
			}
		}
	}
	return fmt.Sprintf("narad %s%s %s/%s %s", version, rev, runtime.GOOS, runtime.GOARCH, runtime.Version())
}

// parseServeFlags reads serve's flags; an unset flag falls back to its environment
// variable, then to the config file (configfile.go), then to its default.
func parseServeFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("narad serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usageText) }
	data := fs.String("data", envOr("NARAD_DATA", "./data"), "data directory (NARAD_DATA)")
	addr := fs.String("addr", envOr("NARAD_ADDR", "127.0.0.1:7942"), "HTTP listen address (NARAD_ADDR)")
	level := fs.String("log-level", envOr("NARAD_LOG_LEVEL", "info"), "debug|info|warn|error (NARAD_LOG_LEVEL)")
	nodeID := fs.String("node-id", envOr("NARAD_NODE_ID", ""), "node name (NARAD_NODE_ID)")
	inflight := fs.String("produce-inflight-max", envOr("NARAD_PRODUCE_INFLIGHT_MAX", "0"),
		"produce requests served at once, 0: unlimited (NARAD_PRODUCE_INFLIGHT_MAX)")
	var cl clusterFlags
	fs.StringVar(&cl.id, "id", envOr("NARAD_ID", "1"), "member id (NARAD_ID)")
	fs.StringVar(&cl.advertise, "advertise", envOr("NARAD_ADVERTISE", ""), "address peers and clients reach (NARAD_ADVERTISE)")
	fs.StringVar(&cl.peers, "peers", envOr("NARAD_PEERS", ""), "initial members, ID=HOST:PORT,… (NARAD_PEERS)")
	fs.StringVar(&cl.secret, "cluster-secret", envOr("NARAD_CLUSTER_SECRET", ""), "cluster secret (NARAD_CLUSTER_SECRET)")
	dev := fs.Bool("dev", envOr("NARAD_DEV", "") == "1", "security off, loopback only (NARAD_DEV=1)")
	local := fs.Bool("produce-local-partitions", envOr("NARAD_PRODUCE_LOCAL_PARTITIONS", "") == "1",
		"keyless messages go to this member's partitions (NARAD_PRODUCE_LOCAL_PARTITIONS=1)")
	metricsAddr := fs.String("metrics-addr", envOr("NARAD_METRICS_ADDR", ""), "serve /metrics without credentials here (NARAD_METRICS_ADDR)")
	tlsCert := fs.String("tls-cert", envOr("NARAD_TLS_CERT", ""), "TLS certificate file (NARAD_TLS_CERT)")
	tlsKey := fs.String("tls-key", envOr("NARAD_TLS_KEY", ""), "TLS key file (NARAD_TLS_KEY)")
	configPath := fs.String(configFlag, envOr("NARAD_CONFIG", ""), "TOML file of these settings (NARAD_CONFIG)")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if err := applyConfigFile(fs, *configPath); err != nil { // below the flags and the environment
		return config{}, err
	}
	cfg := config{data: *data, addr: *addr, nodeID: *nodeID, dev: *dev, adminPassword: os.Getenv("NARAD_ADMIN_PASSWORD"),
		metricsAddr: *metricsAddr, tlsCert: *tlsCert, tlsKey: *tlsKey}
	cfg.node.ProduceLocalPartitions = *local
	if err := checkSecurityFlags(cfg); err != nil {
		return config{}, err
	}
	if err := parseCluster(&cfg, cl); err != nil {
		return config{}, err
	}
	nodeIDSet := false
	fs.Visit(func(f *flag.Flag) { nodeIDSet = nodeIDSet || f.Name == "node-id" })
	if cfg.nodeID == "" && !nodeIDSet { // an explicit empty name is refused below
		cfg.nodeID = defaultNodeID(cfg)
	}
	if err := cfg.logLevel.UnmarshalText([]byte(*level)); err != nil || !validLevel(*level) {
		return config{}, fmt.Errorf("bad log level %q: want debug, info, warn or error", *level)
	}
	n, err := strconv.Atoi(*inflight)
	if err != nil || n < 0 {
		return config{}, fmt.Errorf("bad produce-inflight-max %q: want an integer, 0 or more", *inflight)
	}
	cfg.produceInFlightMax = n
	switch {
	case cfg.data == "":
		return config{}, fmt.Errorf("empty data directory")
	case cfg.nodeID == "":
		return config{}, fmt.Errorf("empty node name (-node-id)")
	}
	return cfg, nil
}

// defaultNodeID names the node in partition_stats: its member id in a cluster (the
// members of one machine share its host name), else the host name.
func defaultNodeID(cfg config) string {
	if cfg.peers != nil {
		return strconv.FormatUint(cfg.id, 10)
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return "narad"
}

// validLevel accepts exactly the four level names (slog also takes forms like "info+2").
func validLevel(s string) bool {
	switch strings.ToLower(s) {
	case "debug", "info", "warn", "error":
		return true
	}
	return false
}

// checkSecurityFlags refuses -dev off loopback, half a TLS pair, and an admin password
// that could never be a user's.
func checkSecurityFlags(cfg config) error {
	switch {
	case cfg.dev && !loopback(cfg.addr):
		return fmt.Errorf("-dev turns access control off and is refused on %s: listen on a loopback address", cfg.addr)
	case (cfg.tlsCert == "") != (cfg.tlsKey == ""):
		return fmt.Errorf("-tls-cert and -tls-key go together")
	case cfg.adminPassword != "" && (len(cfg.adminPassword) < access.PasswordBytesMin || len(cfg.adminPassword) > access.PasswordBytesMax):
		return fmt.Errorf("NARAD_ADMIN_PASSWORD must be %d to %d bytes", access.PasswordBytesMin, access.PasswordBytesMax)
	}
	return nil
}

func envOr(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

func newLogger(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}
