package peernet

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/big"
	"time"

	"github.com/quic-go/quic-go"
)

const (
	alpn           = "narad/1"
	exporterLabel  = "narad peer auth v1"
	proofBytes     = 8 + sha256.Size // node id | HMAC
	roleDialer     = 'd'
	roleAcceptor   = 'a'
	errCodeAuth    = 0x101 // application error code closing an unauthenticated connection
	errCodeClosing = 0x100 // the transport is closing
)

// ErrAuth: the peer did not prove it holds the cluster secret (or is not a known peer).
var ErrAuth = errors.New("net: peer authentication failed")

// tlsConfigs returns the server and client TLS configurations: an ephemeral self-signed
// certificate, TLS 1.3, the narad ALPN. Certificates are not verified: a peer is
// authenticated by the HMAC proof below, bound to the TLS session by its exporter.
func tlsConfigs() (server, client *tls.Config, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(10 * 365 * 24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	cert := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	server = &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{alpn}, MinVersion: tls.VersionTLS13}
	client = &tls.Config{InsecureSkipVerify: true, NextProtos: []string{alpn}, MinVersion: tls.VersionTLS13} //nolint:gosec // peers authenticate with the HMAC proof
	return server, client, nil
}

// resetKey derives the node's QUIC stateless reset key from the cluster secret: the same
// across restarts, so a restarted node resets its peers' connections to its previous
// process at once instead of leaving them to the idle timeout.
func resetKey(secret []byte, id uint64) *quic.StatelessResetKey {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("narad stateless reset v1"))
	mac.Write(binary.LittleEndian.AppendUint64(nil, id))
	var k quic.StatelessResetKey
	copy(k[:], mac.Sum(nil))
	return &k
}

// proof is node id | HMAC-SHA256(secret, TLS exporter material | node id | role): only a
// holder of the secret can make it, and it is valid only inside this TLS session.
func proof(conn *quic.Conn, secret []byte, id uint64, role byte) ([]byte, error) {
	st := conn.ConnectionState().TLS
	ekm, err := st.ExportKeyingMaterial(exporterLabel, nil, 32)
	if err != nil {
		return nil, err
	}
	idb := binary.LittleEndian.AppendUint64(nil, id)
	mac := hmac.New(sha256.New, secret)
	mac.Write(ekm)
	mac.Write(idb)
	mac.Write([]byte{role})
	return mac.Sum(idb), nil
}

// checkProof reads a peer's proof from r and returns its node id when the HMAC is right.
func checkProof(conn *quic.Conn, secret []byte, r io.Reader, role byte) (uint64, error) {
	var got [proofBytes]byte
	if _, err := io.ReadFull(r, got[:]); err != nil {
		return 0, fmt.Errorf("%w: reading the proof: %v", ErrAuth, err)
	}
	id := binary.LittleEndian.Uint64(got[:8])
	want, err := proof(conn, secret, id, role)
	if err != nil {
		return 0, err
	}
	if !hmac.Equal(got[:], want) {
		return 0, fmt.Errorf("%w: wrong proof from a peer claiming id %d", ErrAuth, id)
	}
	return id, nil
}
