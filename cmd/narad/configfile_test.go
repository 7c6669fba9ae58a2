package main

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// exampleConfig is the documented example of the repository.
const exampleConfig = "../../docs/narad.example.toml"

// clearServeEnv unsets (for the test) every environment variable of a serve setting, so
// that the machine's environment cannot decide a test's outcome.
func clearServeEnv(t *testing.T) {
	t.Helper()
	for _, key := range []string{"data", "addr", "log-level", "node-id", "produce-inflight-max", "id", "peers",
		"advertise", "cluster-secret", "dev", "metrics-addr", "tls-cert", "tls-key", "config",
		"produce-local-partitions"} {
		t.Setenv(envName(key), "")
	}
}

// writeConfig writes a config file in a temporary directory and returns its path.
func writeConfig(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "narad.toml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A setting comes from the flag, else the environment, else the file, else the default.
func TestConfigFilePrecedence(t *testing.T) {
	clearServeEnv(t)
	path := writeConfig(t, `
data = "/from/file"
node-id = "file-node"
addr = "127.0.0.1:7101"
log-level = "warn"
produce-inflight-max = 7
dev = true
produce-local-partitions = true
`)
	t.Setenv("NARAD_ADDR", "127.0.0.1:7102")
	t.Setenv("NARAD_LOG_LEVEL", "error")
	t.Setenv("NARAD_DEV", "0")
	cfg, err := parseServeFlags([]string{"-config", path, "-log-level", "debug", "-produce-inflight-max", "9"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ what, got, want string }{
		{"data: the file alone", cfg.data, "/from/file"},
		{"node-id: the file alone", cfg.nodeID, "file-node"},
		{"addr: the environment over the file", cfg.addr, "127.0.0.1:7102"},
		{"log-level: the flag over the environment and the file", cfg.logLevel.String(), "DEBUG"},
		{"metrics-addr: the default", cfg.metricsAddr, ""},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %q, want %q", c.what, c.got, c.want)
		}
	}
	if !cfg.node.ProduceLocalPartitions {
		t.Errorf("produce-local-partitions: the file's true is lost")
	}
	if cfg.produceInFlightMax != 9 || cfg.dev {
		t.Errorf("produce-inflight-max %d (want the flag's 9), dev %v (want NARAD_DEV=0's false)", cfg.produceInFlightMax, cfg.dev)
	}
	// NARAD_CONFIG names the file when -config is absent; the cluster keys, peers as an
	// array.
	t.Setenv("NARAD_ADDR", "")
	t.Setenv("NARAD_CONFIG", writeConfig(t, `
id = 2
addr = "127.0.0.1:7002"
peers = ["1=127.0.0.1:7001", "2=127.0.0.1:7002", "3=127.0.0.1:7003"]
cluster-secret = "`+clusterSecret+`"
`))
	cfg, err = parseServeFlags(nil, io.Discard)
	if err != nil || cfg.id != 2 || len(cfg.peers) != 3 || string(cfg.secret) != clusterSecret || cfg.nodeID != "2" {
		t.Fatalf("cluster from NARAD_CONFIG: %+v %v", cfg, err)
	}
	// Without a file: the defaults.
	t.Setenv("NARAD_CONFIG", "")
	if cfg, err = parseServeFlags(nil, io.Discard); err != nil || cfg.data != "./data" || cfg.addr != "127.0.0.1:7942" {
		t.Fatalf("defaults: %+v %v", cfg, err)
	}
}

// A bad file is a usage error (status 2) that names the file and the key at fault.
func TestConfigFileErrors(t *testing.T) {
	clearServeEnv(t)
	for _, c := range []struct {
		text string
		want []string
	}{
		{`daat = "/x"`, []string{`unknown key "daat"`, "narad.toml", "addr, advertise, cluster-secret"}},
		{`config = "other.toml"`, []string{`unknown key "config"`}},
		{"[cluster]\nid = 2", []string{`unknown key "cluster"`}},
		{`id = "2"`, []string{`key "id" must be an integer, not a string`}},
		{`produce-inflight-max = 1.5`, []string{`key "produce-inflight-max" must be an integer, not a float`}},
		{`dev = "yes"`, []string{`key "dev" must be a boolean`}},
		{`data = 5`, []string{`key "data" must be a string, not an integer`}},
		{`peers = [1, 2]`, []string{`key "peers" must be a string or an array of strings`}},
		{`log-level = "loud"`, []string{`bad log level "loud"`}},
		{`data = "x`, []string{"narad.toml", "line 1"}},
	} {
		path := writeConfig(t, c.text)
		var stderr bytes.Buffer
		got := run([]string{"serve", "-config", path}, io.Discard, &stderr, nil)
		for _, w := range c.want {
			if got != 2 || !strings.Contains(stderr.String(), w) {
				t.Errorf("file %q: status %d, %q; want 2 and %q", c.text, got, stderr.String(), w)
			}
		}
	}
	missing := filepath.Join(t.TempDir(), "absent.toml")
	var stderr bytes.Buffer
	if got := run([]string{"serve", "-config", missing}, io.Discard, &stderr, nil); got != 2 ||
		!strings.Contains(stderr.String(), missing) || !strings.Contains(stderr.String(), "no such file") {
		t.Errorf("missing file: status %d, %q; want 2 naming %s", got, stderr.String(), missing)
	}
}

// The repository's example loads as it is, names every key, and every key it leaves
// commented out is right too (uncommented, the file still loads).
func TestExampleConfig(t *testing.T) {
	clearServeEnv(t)
	cfg, err := parseServeFlags([]string{"-config", exampleConfig}, io.Discard)
	if err != nil || cfg.data != "./data" || cfg.addr != "127.0.0.1:7942" || cfg.dev || cfg.peers != nil {
		t.Fatalf("%s: %+v %v", exampleConfig, cfg, err)
	}
	text, err := os.ReadFile(exampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	uncommented := regexp.MustCompile(`(?m)^# ([a-z-]+ = )`).ReplaceAll(text, []byte("$1"))
	var keys []string
	for _, m := range regexp.MustCompile(`(?m)^([a-z-]+) = `).FindAllSubmatch(uncommented, -1) {
		keys = append(keys, string(m[1]))
	}
	slices.Sort(keys)
	if want := serveConfigKeys(t); !slices.Equal(keys, want) {
		t.Errorf("%s names the keys %q; serve's flags are %q", exampleConfig, keys, want)
	}
	cfg, err = parseServeFlags([]string{"-config", writeConfig(t, string(uncommented))}, io.Discard)
	if err != nil || cfg.nodeID != "broker-a" || len(cfg.peers) != 3 || cfg.tlsKey == "" || cfg.metricsAddr == "" {
		t.Fatalf("%s with every key uncommented: %+v %v", exampleConfig, cfg, err)
	}
}

// serveConfigKeys are the keys a config file may hold, as the unknown-key error lists
// them (from serve's flag set itself), sorted.
func serveConfigKeys(t *testing.T) []string {
	t.Helper()
	_, err := parseServeFlags([]string{"-config", writeConfig(t, `not-a-flag = 1`)}, io.Discard)
	m := regexp.MustCompile(`flag names: (.*)\)$`).FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("the unknown-key error does not list the keys: %v", err)
	}
	keys := strings.Split(m[1], ", ")
	slices.Sort(keys)
	return keys
}

// A daemon given nothing but a config file (its data directory and address too) serves.
func TestConfigFileStartsADaemon(t *testing.T) {
	clearServeEnv(t)
	dir := t.TempDir()
	path := writeConfig(t, `
data = "`+dir+`"
addr = "127.0.0.1:0"
node-id = "from-the-file"
produce-inflight-max = 64
`)
	d := startDaemonArgs(t, dir, []string{"-config", path}, nil, "http://", &http.Transport{})
	if d.nodeID != "from-the-file" {
		t.Errorf("node id %q, want the file's", d.nodeID)
	}
	d.createTopic(`{"name":"configured","partitions":1}`)
	d.produce(http.StatusAccepted, "configured", "", []byte("hello"))
	if owner := d.getTopic("configured").PartitionStats[0].OwnerNode; owner != "from-the-file" {
		t.Errorf("owner_node %q, want the file's node-id", owner)
	}
	if st := d.shutdown(); st != 0 {
		t.Fatalf("exit status %d", st)
	}
}
