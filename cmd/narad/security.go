package main

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/narad/narad/core/access"
	"github.com/narad/narad/core/meta"
	"github.com/narad/narad/io/auth"
)

// Access control (issue 12; API.md, "Access"), on unless -dev. The root user admin is
// made on a new cluster's first start with the password of NARAD_ADMIN_PASSWORD, or a
// generated one that is logged once, when the root user made with it has applied.

// generatedPasswordBytes is the entropy of a generated admin password (base64: 24 chars).
const generatedPasswordBytes = 18

// security is the daemon's access control: the authenticator the HTTP layer checks
// requests with, and the root user this node proposes.
type security struct {
	auth      *auth.Authenticator
	password  string        // the root user's password this node proposes
	rootHash  string        // its hash, once hashRoot made it (under mu)
	generated string        // the password, when this node generated it (logged once, then "")
	hashed    chan struct{} // closed once hashRoot returned
	mu        sync.Mutex
	log       *slog.Logger
}

// newSecurity prepares access control: nil with -dev.
func newSecurity(cfg config, logger *slog.Logger) (*security, error) {
	if cfg.dev {
		logger.Warn("security is off (-dev): every route is open to whoever reaches " + cfg.addr)
		return nil, nil
	}
	password, generated := cfg.adminPassword, ""
	if password == "" {
		b := make([]byte, generatedPasswordBytes)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		password = base64.RawURLEncoding.EncodeToString(b)
		generated = password
	}
	if err := access.CheckPassword(password); err != nil {
		return nil, fmt.Errorf("NARAD_ADMIN_PASSWORD: %w", err)
	}
	if cfg.tlsCert == "" && !loopback(cfg.addr) {
		logger.Warn("serving HTTP Basic credentials without TLS on a non-loopback address: set -tls-cert and -tls-key",
			"addr", cfg.addr)
	}
	return &security{auth: auth.New(), password: password, generated: generated, log: logger, hashed: make(chan struct{})}, nil
}

// hashRoot hashes the root password and hands it to the node, off the start path: bcrypt
// is slow on purpose, and the node needs the hash only once it leads a metastore that has
// no root user.
func (s *security) hashRoot(set func(string)) {
	defer close(s.hashed)
	hash, err := auth.Hash(s.password)
	if err != nil {
		s.log.Error("hashing the root password", "err", err)
		return
	}
	s.mu.Lock()
	s.rootHash = hash
	s.mu.Unlock()
	set(hash)
}

// onUsers takes the replica's users (nodeshell.WatchUsers: under the shell's lock, so it
// only stores them and, once, logs the generated password).
func (s *security) onUsers(users []meta.User, owners map[string]string) {
	s.auth.SetUsers(users)
	s.auth.SetOwners(owners)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.generated == "" || s.rootHash == "" {
		return
	}
	for _, u := range users {
		if u.Root && u.Name == access.RootUsername && u.Hash == s.rootHash {
			s.log.Warn("created the root user admin with a generated password, shown only this once; change it with "+
				"PUT /v1/users/admin/password (or set NARAD_ADMIN_PASSWORD before a new cluster's first start)",
				"username", access.RootUsername, "password", s.generated)
			s.generated = ""
		}
	}
}

// loopback reports whether the host of addr is a loopback address (an empty host
// listens on every interface: not loopback).
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// metricsServer serves /metrics without credentials on its own address (-metrics-addr),
// for a scraper on a trusted network; nil without one.
func metricsServer(addr string, reg *prometheus.Registry, logger *slog.Logger) (*http.Server, net.Listener, error) {
	if addr == "" {
		return nil, nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("metrics address: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	return hs, ln, nil
}
