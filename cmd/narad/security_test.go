package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestSecurityFlags(t *testing.T) {
	bad := map[string][]string{
		"-dev on every interface": {"-dev", "-addr", ":7942"},
		"-dev on a public host":   {"-dev", "-addr", "192.0.2.1:7942"},
		"half a TLS pair":         {"-tls-cert", "c.pem"},
	}
	for name, args := range bad {
		if _, err := parseServeFlags(args, io.Discard); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:7942", "[::1]:7942"} {
		if _, err := parseServeFlags([]string{"-dev", "-addr", addr}, io.Discard); err != nil {
			t.Errorf("-dev on %s: %v", addr, err)
		}
	}
	t.Setenv("NARAD_ADMIN_PASSWORD", "short")
	if _, err := parseServeFlags(nil, io.Discard); err == nil || !strings.Contains(err.Error(), "NARAD_ADMIN_PASSWORD") {
		t.Errorf("a 5-byte admin password: %v", err)
	}
}

var generatedLine = regexp.MustCompile(`generated password.* password=([A-Za-z0-9_-]+)`)

// Without NARAD_ADMIN_PASSWORD the first start logs a generated password once; it works,
// and a restart on the same directory logs none and keeps it.
func TestGeneratedAdminPassword(t *testing.T) {
	dir := t.TempDir()
	d := startDaemon(t, dir, nil, func(c *config) { c.adminPassword = "" })
	password := ""
	for _, l := range d.logs.snapshot() {
		if m := generatedLine.FindStringSubmatch(l); m != nil {
			if password != "" {
				t.Fatalf("the password was logged twice")
			}
			password = m[1]
		}
	}
	if len(password) < 16 {
		t.Fatalf("no generated password in the log")
	}
	if r := d.do(http.MethodGet, "/v1/users", map[string]string{"Authorization": basicOf("admin", password)}, nil); r.status != http.StatusOK {
		t.Fatalf("the generated password: %v", r)
	}
	if r := d.do(http.MethodGet, "/v1/users", nil, nil); r.status != http.StatusUnauthorized {
		t.Fatalf("the test password on a node that generated its own: %v", r)
	}
	d.shutdown()
	d2 := startDaemon(t, dir, nil, func(c *config) { c.adminPassword = "" })
	if d2.logs.has("generated password") {
		t.Fatalf("a restart logged a generated password")
	}
	if r := d2.do(http.MethodGet, "/v1/users", map[string]string{"Authorization": basicOf("admin", password)}, nil); r.status != http.StatusOK {
		t.Fatalf("the generated password after a restart: %v", r)
	}
}

func basicOf(user, password string) string {
	req, _ := http.NewRequest(http.MethodGet, "/", nil)
	req.SetBasicAuth(user, password)
	return req.Header.Get("Authorization")
}

// -dev serves every route without credentials.
func TestDevModeIsOpen(t *testing.T) {
	d := startDaemon(t, t.TempDir(), []string{"-dev"}, nil)
	anon := map[string]string{"Authorization": "-"}
	d.expect(http.StatusCreated, http.MethodPost, "/v1/topics", map[string]string{"Authorization": "-", "Content-Type": "application/json"},
		[]byte(`{"name":"open"}`))
	if r := d.do(http.MethodGet, "/v1/topics", anon, nil); r.status != http.StatusOK {
		t.Fatalf("GET /v1/topics without credentials: %v", r)
	}
}

// -metrics-addr serves /metrics without credentials there, while the API's /metrics
// still needs them.
func TestMetricsAddrServesWithoutCredentials(t *testing.T) {
	d := startDaemon(t, t.TempDir(), []string{"-metrics-addr", "127.0.0.1:0"}, nil)
	var addr string
	for _, l := range d.logs.snapshot() {
		if m := regexp.MustCompile(`metrics_addr=(\S+)`).FindStringSubmatch(l); m != nil {
			addr = m[1]
		}
	}
	if addr == "" {
		t.Fatal("no metrics_addr in the log")
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "narad_http_requests_in_flight") {
		t.Fatalf("metrics address: %d", resp.StatusCode)
	}
	if r := d.do(http.MethodGet, "/metrics", map[string]string{"Authorization": "-"}, nil); r.status != http.StatusUnauthorized {
		t.Fatalf("/metrics on the API address without credentials: %v", r)
	}
}

// With -tls-cert and -tls-key the API is served over HTTPS only.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key := selfSigned(t, dir)
	d := startDaemonTLS(t, dir, cert, key)
	if r := d.do(http.MethodGet, "/v1/users", nil, nil); r.status != http.StatusOK {
		t.Fatalf("over TLS: %v", r)
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + d.addr + "/readyz")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatalf("plain HTTP answered 200 on a TLS listener")
		}
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key under dir.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "narad test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	write := func(name, typ string, b []byte) {
		if err := os.WriteFile(name, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(certFile, "CERTIFICATE", der)
	write(keyFile, "EC PRIVATE KEY", kb)
	return certFile, keyFile
}

// startDaemonTLS is startDaemon serving HTTPS with cert and key; its client trusts any
// certificate (the test's own).
func startDaemonTLS(t *testing.T, dir, cert, key string) *testDaemon {
	t.Helper()
	return startDaemonWith(t, dir, []string{"-tls-cert", cert, "-tls-key", key}, nil, "https://",
		&http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}) //nolint:gosec // the test's self-signed cert
}

// The root user's credentials are checked on every member: a user made on one node
// produces through another, and a password changed on a third stops the old one on all.
func TestClusterUsers(t *testing.T) {
	_, ms := clusterUnderTest(t)
	createClusterTopic(t, ms)
	r := ms[0].c.do(http.MethodPost, "/v1/users",
		`{"username":"app","password":"app-password","grants":[{"action":"produce","patterns":["cluster"]}]}`)
	if r.status != http.StatusCreated {
		t.Fatalf("create a user on node 1: %v", r)
	}
	eventually(t, clusterFormBound, "the user produces through node 2", func() bool {
		r, err := ms[1].c.as("app", "app-password").try(http.MethodPost, "/v1/topics/cluster/produce", `"hello"`)
		return err == nil && r.status == http.StatusAccepted
	})
	if r := ms[1].c.as("app", "app-password").do(http.MethodGet, "/v1/users", ""); r.status != http.StatusForbidden {
		t.Fatalf("a producer reads the users: %v", r)
	}
	r = ms[2].c.do(http.MethodPut, "/v1/users/app/password", `{"new_password":"app-password-2"}`)
	if r.status != http.StatusNoContent {
		t.Fatalf("change the password on node 3: %v", r)
	}
	for _, m := range ms {
		eventually(t, clusterFormBound, fmt.Sprintf("node %d refuses the old password", m.id), func() bool {
			r, err := m.c.as("app", "app-password").try(http.MethodPost, "/v1/topics/cluster/produce", `"old"`)
			return err == nil && r.status == http.StatusUnauthorized
		})
		if r := m.c.as("app", "app-password-2").do(http.MethodPost, "/v1/topics/cluster/produce", `"new"`); r.status != http.StatusAccepted {
			t.Fatalf("node %d with the new password: %v", m.id, r)
		}
	}
}
