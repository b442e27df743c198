package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// certCheckInterval is how often, at most, a handshake looks whether the
// certificate files changed: two stats, far cheaper than the handshake.
const certCheckInterval = time.Second

// certReloader serves a certificate loaded from a PEM certificate chain and
// key, and loads the pair again on reload (SIGHUP) and when either file
// changes. It needs no goroutine: the first handshake a second or more after
// the last look stats both files. A pair that does not load (a file half
// written, a key that does not match the certificate yet) is logged once and
// the old pair kept; it is tried again at the next look.
type certReloader struct {
	certFile string
	keyFile  string
	log      *slog.Logger

	cert      atomic.Pointer[tls.Certificate]
	nextCheck atomic.Int64 // unix nanoseconds

	mu     sync.Mutex // serializes loads
	loaded stamps     // the files as last loaded
	failed stamps     // the files as last failed to load, logged once
}

// stamps identify a version of the two files.
type stamps struct {
	cert, key stamp
}

type stamp struct {
	mod  int64 // unix nanoseconds
	size int64
}

func newCertReloader(certFile, keyFile string, log *slog.Logger) (*certReloader, error) {
	if certFile == "" || keyFile == "" {
		return nil, errors.New("TLS needs both QUEEN_TLS_CERT and QUEEN_TLS_KEY")
	}
	c := &certReloader{certFile: certFile, keyFile: keyFile, log: log.With("component", "tls")}
	st, err := c.stat()
	if err != nil {
		return nil, err
	}
	if err := c.load(st); err != nil {
		return nil, err
	}
	c.nextCheck.Store(time.Now().Add(certCheckInterval).UnixNano())
	return c, nil
}

func (c *certReloader) stat() (stamps, error) {
	var st stamps
	for _, f := range []struct {
		name string
		to   *stamp
	}{{c.certFile, &st.cert}, {c.keyFile, &st.key}} {
		fi, err := os.Stat(f.name)
		if err != nil {
			return stamps{}, fmt.Errorf("TLS: %w", err)
		}
		*f.to = stamp{fi.ModTime().UnixNano(), fi.Size()}
	}
	return st, nil
}

// load loads the pair and, if it is valid, serves it from now on.
func (c *certReloader) load(st stamps) error {
	pair, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		return fmt.Errorf("TLS: load QUEEN_TLS_CERT %s and QUEEN_TLS_KEY %s: %w", c.certFile, c.keyFile, err)
	}
	c.cert.Store(&pair)
	c.loaded = st
	return nil
}

// reload loads the pair again whether or not the files look changed.
func (c *certReloader) reload() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, err := c.stat()
	if err == nil {
		err = c.load(st)
	}
	if err != nil {
		c.log.Error("TLS certificate not reloaded; serving the previous one", "err", err)
		return err
	}
	c.log.Info("TLS certificate reloaded", "cert", c.certFile)
	return nil
}

// checkFiles loads the pair again if the files changed since it was
// loaded; at most one caller per interval looks.
func (c *certReloader) checkFiles(now time.Time) {
	next := c.nextCheck.Load()
	if now.UnixNano() < next || !c.nextCheck.CompareAndSwap(next, now.Add(certCheckInterval).UnixNano()) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st, err := c.stat()
	if err != nil || st == c.loaded {
		return
	}
	if err := c.load(st); err != nil {
		if st != c.failed {
			c.failed = st
			c.log.Warn("TLS certificate files changed but do not load; serving the previous certificate", "err", err)
		}
		return
	}
	c.log.Info("TLS certificate files changed; certificate reloaded", "cert", c.certFile)
}

// getCertificate is tls.Config.GetCertificate.
func (c *certReloader) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.checkFiles(time.Now())
	return c.cert.Load(), nil
}
