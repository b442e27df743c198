package auth

import (
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
)

// ParsePublicKey reads a PEM public key for JWT verification: an RSA key
// (PKIX "PUBLIC KEY" or PKCS #1 "RSA PUBLIC KEY"), an Ed25519 key, or the key
// of a "CERTIFICATE". Literal \n sequences count as newlines, so that a key
// fits in one environment variable.
func ParsePublicKey(text string) (any, error) {
	text = strings.ReplaceAll(text, `\n`, "\n")
	block, _ := pem.Decode([]byte(text))
	if block == nil {
		return nil, errors.New("no PEM block (want -----BEGIN PUBLIC KEY-----)")
	}
	var key any
	var err error
	switch block.Type {
	case "PUBLIC KEY":
		key, err = x509.ParsePKIXPublicKey(block.Bytes)
	case "RSA PUBLIC KEY":
		key, err = x509.ParsePKCS1PublicKey(block.Bytes)
	case "CERTIFICATE":
		var cert *x509.Certificate
		if cert, err = x509.ParseCertificate(block.Bytes); err == nil {
			key = cert.PublicKey
		}
	default:
		return nil, fmt.Errorf("a PEM block of type %q, want PUBLIC KEY", block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("bad %s: %w", block.Type, err)
	}
	return key, checkKey(key)
}

// checkKey accepts RSA keys of 2048 bits or more and Ed25519 keys.
func checkKey(key any) error {
	switch k := key.(type) {
	case *rsa.PublicKey:
		if k.N.BitLen() < 2048 {
			return fmt.Errorf("an RSA key of %d bits, want 2048 at least", k.N.BitLen())
		}
		return nil
	case ed25519.PublicKey:
		return nil
	}
	return fmt.Errorf("a %T key, want RSA or Ed25519", key)
}

// family is a kind of signature: HMAC, RSA PKCS #1 v1.5, or EdDSA.
type family uint8

const (
	familyHMAC family = iota + 1
	familyRSA
	familyEdDSA
)

// algorithms are the algorithms tokens may use, by family.
var algorithms = map[string]family{
	"HS256": familyHMAC, "HS384": familyHMAC, "HS512": familyHMAC,
	"RS256": familyRSA, "RS384": familyRSA, "RS512": familyRSA,
	"EdDSA": familyEdDSA,
}

// ValidAlgorithm reports whether JWT_ALGORITHM may be alg.
func ValidAlgorithm(alg string) bool {
	_, ok := algorithms[alg]
	return ok || alg == "auto"
}

// fits reports whether key can verify signatures of family f.
func (f family) fits(key any) bool {
	switch key.(type) {
	case *rsa.PublicKey:
		return f == familyRSA
	case ed25519.PublicKey:
		return f == familyEdDSA
	}
	return false
}
