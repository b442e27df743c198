package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/queen-go/queen/internal/testlog"
)

// writeCert writes a self-signed certificate for 127.0.0.1 named cn, and
// its key, and returns a pool that trusts it.
func writeCert(t *testing.T, cn, certFile, keyFile string) *x509.CertPool {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, BasicConstraintsValid: true, IsCA: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return pool
}

// TestSecuredBrokerFromTheEnvironment runs the binary with JWT, API
// tokens, tenancy, CORS and TLS set by environment variables: the settings
// reach the server, and SIGHUP reloads the certificate.
func TestSecuredBrokerFromTheEnvironment(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	pools := []*x509.CertPool{writeCert(t, "first", certFile, keyFile)}
	port := freePort(t)
	const tenant = "0192f0a0-aaaa-7000-8000-00000000000a"
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), runMainEnv+"=1", "QUEEN_DATA_DIR="+filepath.Join(dir, "data"),
		"QUEEN_BIND_ADDR=127.0.0.1", fmt.Sprintf("PORT=%d", port),
		"JWT_ENABLED=true", "JWT_SECRET=env-secret-of-thirty-two-bytes-at-least", "JWT_ISSUER=tests",
		"QUEEN_API_TOKENS=adm1n-t0ken:admin:"+tenant,
		"QUEEN_TENANCY_ENABLED=true", "CORS_ALLOW_ORIGIN=https://dash.example.com",
		"QUEEN_TLS_CERT="+certFile, "QUEEN_TLS_KEY="+keyFile)
	logs := &testlog.Buffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	base := fmt.Sprintf("https://127.0.0.1:%d", port)

	// do sends one request on a fresh connection trusting the newest
	// certificate, and returns the status, body and served certificate.
	do := func(method, path, token, body string, header ...string) (int, string, string) {
		t.Helper()
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pools[len(pools)-1]}, DisableKeepAlives: true,
			ForceAttemptHTTP2: true}
		defer tr.CloseIdleConnections()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			return 0, err.Error(), ""
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data), resp.TLS.PeerCertificates[0].Subject.CommonName
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		if code, _, _ := do("GET", "/health", "", ""); code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker did not become healthy over TLS; logs:\n%s", logs)
		}
		time.Sleep(20 * time.Millisecond)
	}

	jwtToken, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "svc-orders", "iss": "tests",
		"role": "read-write", "tenant": tenant}).SignedString([]byte("env-secret-of-thirty-two-bytes-at-least"))
	push := `{"items":[{"queue":"secured","payload":{"n":1},"producerSub":"forged"}]}`
	if code, body, _ := do("POST", "/api/v1/push", "", push); code != 401 || body != `{"error":"Authentication required"}` {
		t.Fatalf("push without a token: %d %s", code, body)
	}
	if code, body, _ := do("POST", "/api/v1/push", jwtToken, push); code != 201 {
		t.Fatalf("push with the JWT: %d %s", code, body)
	}
	code, body, _ := do("GET", "/api/v1/pop/queue/secured", "adm1n-t0ken", "")
	var pop struct {
		Messages []struct{ ProducerSub *string }
	}
	_ = json.Unmarshal([]byte(body), &pop)
	if code != 200 || len(pop.Messages) != 1 || pop.Messages[0].ProducerSub == nil || *pop.Messages[0].ProducerSub != "svc-orders" {
		t.Fatalf("pop with the API token of the same tenant: %d %s; want the message, producerSub svc-orders", code, body)
	}
	if code, _, _ := do("OPTIONS", "/api/v1/push", "", "", "Origin", "https://dash.example.com"); code != 204 {
		t.Fatalf("CORS preflight: %d", code)
	}

	// SIGHUP reloads the certificate.
	pools = append(pools, writeCert(t, "second", certFile, keyFile))
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(15 * time.Second)
	for {
		_, _, cn := do("GET", "/healthz", "", "")
		if cn == "second" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("certificate not reloaded after SIGHUP (serving %q); logs:\n%s", cn, logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), "TLS certificate reloaded") || strings.Contains(logs.String(), "authentication is off") {
		t.Fatalf("logs:\n%s\nwant the reload logged and no open-broker warning", logs)
	}
}

// TestOpenBrokerWarns: a broker started without authentication says so.
func TestOpenBrokerWarns(t *testing.T) {
	p := startBroker(t, t.TempDir())
	if !strings.Contains(p.logs.String(), "authentication is off: every route is open") {
		t.Fatalf("no warning that the broker is open; logs:\n%s", p.logs)
	}
}
