package server_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/auth"
	"github.com/queen-go/queen/internal/server"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/sqlite"
)

// serve starts a server on ln (over a fresh embedded store) and returns it.
func serve(t *testing.T, cfg server.Config, ln net.Listener) *server.Server {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return serveStore(t, cfg, st, ln)
}

// serveStore starts a server over st on ln; the test's cleanup shuts it
// down and closes st.
func serveStore(t *testing.T, cfg server.Config, st store.Store, ln net.Listener) *server.Server {
	t.Helper()
	srv, err := server.New(cfg, st)
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
		st.Close()
	})
	return srv
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// everywhere is a loopback listener that says it listens on every
// interface, as a broker bound to 0.0.0.0 does; the test still only talks
// to 127.0.0.1.
type everywhere struct{ net.Listener }

func (everywhere) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4zero, Port: 6632} }

func health(t *testing.T, url string) map[string]any {
	t.Helper()
	resp, err := http.Get(url + "/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	return h
}

// TestHealthSaysAuthNone: only a broker without authentication that other
// hosts can reach says "auth":"none".
func TestHealthSaysAuthNone(t *testing.T) {
	toks, _ := auth.ParseTokens("t0ken:admin")
	for _, tc := range []struct {
		name     string
		cfg      server.Config
		wrap     bool
		wantNone bool
	}{
		{"open on every interface", server.Config{}, true, true},
		{"open on loopback", server.Config{}, false, false},
		{"tokens on every interface", server.Config{Auth: auth.Config{Tokens: toks}}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln := listen(t)
			url := "http://" + ln.Addr().String()
			if tc.wrap {
				ln = everywhere{ln}
			}
			serve(t, tc.cfg, ln)
			h := health(t, url)
			if got := h["auth"] == "none"; got != tc.wantNone {
				t.Fatalf("/health %v: auth none %v, want %v", h, got, tc.wantNone)
			}
		})
	}
}

// testCA signs leaf certificates for 127.0.0.1.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "queen test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// writeLeaf writes a certificate for 127.0.0.1 named cn, and its key, to
// the two files, and dates their modification at mod.
func (ca *testCA) writeLeaf(t *testing.T, cn, certFile, keyFile string, mod time.Time) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		name string
		data []byte
	}{
		{certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})},
		{keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})},
	} {
		if err := os.WriteFile(f.name, f.data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(f.name, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
}

// servedCN makes a new TLS connection and returns the common name of the
// certificate the server presents, and the HTTP version of a /health
// request over it.
func servedCN(t *testing.T, ca *testCA, addr string) (cn, proto string) {
	t.Helper()
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.pool}, ForceAttemptHTTP2: true, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("https://" + addr + "/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /health over TLS: %d", resp.StatusCode)
	}
	return resp.TLS.PeerCertificates[0].Subject.CommonName, resp.Proto
}

// TestTLS: a round trip over HTTPS with HTTP/2, the certificate reloaded
// when its files change and on ReloadTLS, and a broken pair never served.
func TestTLS(t *testing.T) {
	ca := newCA(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	start := time.Now().Add(-time.Minute).Truncate(time.Second)
	ca.writeLeaf(t, "first", certFile, keyFile, start)

	ln := listen(t)
	srv := serve(t, server.Config{TLSCertFile: certFile, TLSKeyFile: keyFile}, ln)
	addr := ln.Addr().String()
	if !srv.TLS() {
		t.Fatal("TLS() is false")
	}
	cn, proto := servedCN(t, ca, addr)
	if cn != "first" || proto != "HTTP/2.0" {
		t.Fatalf("served %q over %s, want first over HTTP/2.0", cn, proto)
	}
	// Plain HTTP on the TLS port is refused.
	if resp, err := http.Get("http://" + addr + "/health"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("plain HTTP answered 200 on the TLS port")
		}
	}

	// New files: picked up by a handshake within a second or so.
	ca.writeLeaf(t, "second", certFile, keyFile, start.Add(time.Second))
	deadline := time.Now().Add(15 * time.Second)
	for cn != "second" {
		if time.Now().After(deadline) {
			t.Fatalf("still serving %q after the files changed", cn)
		}
		time.Sleep(50 * time.Millisecond)
		cn, _ = servedCN(t, ca, addr)
	}

	// ReloadTLS (SIGHUP) loads at once.
	ca.writeLeaf(t, "third", certFile, keyFile, start.Add(2*time.Second))
	if err := srv.ReloadTLS(); err != nil {
		t.Fatal(err)
	}
	if cn, _ = servedCN(t, ca, addr); cn != "third" {
		t.Fatalf("served %q after ReloadTLS, want third", cn)
	}

	// A key that does not match: refused, the old pair kept.
	if err := os.WriteFile(keyFile, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := srv.ReloadTLS(); err == nil {
		t.Fatal("ReloadTLS with a broken key: no error")
	}
	if cn, _ = servedCN(t, ca, addr); cn != "third" {
		t.Fatalf("served %q after a failed reload, want third", cn)
	}
}

func TestTLSNeedsBothFiles(t *testing.T) {
	st, err := sqlite.Open(context.Background(), sqlite.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := server.New(server.Config{TLSCertFile: "cert.pem"}, st); err == nil {
		t.Fatal("a certificate without a key: no error")
	}
	if _, err := server.New(server.Config{TLSCertFile: "nope.pem", TLSKeyFile: "nope.key"}, st); err == nil {
		t.Fatal("missing files: no error")
	}
}
