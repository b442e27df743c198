package ingress

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"

	"github.com/queen-go/queen/api"
)

// The headers of a signed request, on ingress and on delivery.
const (
	HeaderKeyID         = "X-Queuey-Key-Id"
	HeaderTimestamp     = "X-Queuey-Timestamp"
	HeaderNonce         = "X-Queuey-Nonce"
	HeaderContentSHA256 = "X-Queuey-Content-SHA256"
	HeaderSignature     = "X-Queuey-Signature"
	HeaderPath          = "X-Queuey-Path"
	HeaderEventID       = "X-Queuey-Event-Id"
	HeaderAPIKey        = "X-Api-Key"
	HeaderIdempotency   = "Idempotency-Key"
)

// canonicalPrefix is the first line of the canonical string: it names the
// scheme, so a signature of another scheme never verifies as ours.
const canonicalPrefix = "QUEUEY-HMAC-SHA256"

// Limits of the signature headers' values.
const (
	maxKeyID = 128
	maxNonce = 128
)

// Signed is the decoded signature headers of a request.
type Signed struct {
	KeyID     string
	Timestamp int64 // Unix seconds
	Nonce     string
	BodySHA   string // lowercase hex, 64 characters
	Signature string // lowercase hex, 64 characters
}

// Canonical is the string a request's signature covers, lines joined by
// "\n": the scheme, the method, the escaped path, the raw query as sent
// ("" when none), the body's SHA-256 and the key id, timestamp and nonce
// headers.
func Canonical(method, path, rawQuery string, s Signed) string {
	return strings.Join([]string{canonicalPrefix, method, path, rawQuery, s.BodySHA, s.KeyID,
		strconv.FormatInt(s.Timestamp, 10), s.Nonce}, "\n")
}

// Sign returns the lowercase hex HMAC-SHA256 of canonical under secret
// (the secret's text as the key).
func Sign(secret, canonical string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(canonical))
	return hex.EncodeToString(m.Sum(nil))
}

// BodySHA returns the lowercase hex SHA-256 of body.
func BodySHA(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

// SignRequest sets the signature headers of req, whose body is body, under
// keyID and secret at unix seconds ts with nonce.
func SignRequest(req *http.Request, body []byte, keyID, secret string, ts int64, nonce string) {
	s := Signed{KeyID: keyID, Timestamp: ts, Nonce: nonce, BodySHA: BodySHA(body)}
	s.Signature = Sign(secret, Canonical(req.Method, req.URL.EscapedPath(), req.URL.RawQuery, s))
	req.Header.Set(HeaderKeyID, keyID)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(HeaderNonce, nonce)
	req.Header.Set(HeaderContentSHA256, s.BodySHA)
	req.Header.Set(HeaderSignature, s.Signature)
}

// ParseSigned decodes the signature headers of h. Every header must be
// present once, the key id and nonce printable ASCII without spaces, the
// timestamp decimal Unix seconds, the hashes 64 lowercase hex digits; any
// other value is an invalid signature.
func ParseSigned(h http.Header) (Signed, error) {
	var s Signed
	one := func(name string) (string, bool) {
		v := h.Values(name)
		if len(v) != 1 || v[0] == "" {
			return "", false
		}
		return v[0], true
	}
	var ok bool
	if s.Signature, ok = one(HeaderSignature); !ok || !isHex64(s.Signature) {
		return Signed{}, api.ErrInvalidSignature.With("missing or malformed " + HeaderSignature)
	}
	if s.KeyID, ok = one(HeaderKeyID); !ok || !isToken(s.KeyID, maxKeyID) {
		return Signed{}, api.ErrInvalidSignature.With("missing or malformed " + HeaderKeyID)
	}
	ts, ok := one(HeaderTimestamp)
	if ok {
		ok = len(ts) <= 12 && strings.Trim(ts, "0123456789") == ""
	}
	if ok {
		s.Timestamp, _ = strconv.ParseInt(ts, 10, 64)
	} else {
		return Signed{}, api.ErrInvalidSignature.With("missing or malformed " + HeaderTimestamp + " (Unix seconds)")
	}
	if s.Nonce, ok = one(HeaderNonce); !ok || !isToken(s.Nonce, maxNonce) {
		return Signed{}, api.ErrInvalidSignature.With("missing or malformed " + HeaderNonce)
	}
	if s.BodySHA, ok = one(HeaderContentSHA256); !ok || !isHex64(s.BodySHA) {
		return Signed{}, api.ErrInvalidSignature.With("missing or malformed " + HeaderContentSHA256)
	}
	return s, nil
}

// Verify reports whether s signs the request (method, path, rawQuery) with
// body under secret, comparing in constant time.
func (s Signed) Verify(secret, method, path, rawQuery string, body []byte) bool {
	bodyOK := hmac.Equal([]byte(BodySHA(body)), []byte(s.BodySHA))
	sigOK := hmac.Equal([]byte(Sign(secret, Canonical(method, path, rawQuery, s))), []byte(s.Signature))
	return bodyOK && sigOK
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// isToken reports whether s is 1 to max printable ASCII characters
// without spaces.
func isToken(s string, max int) bool {
	if len(s) == 0 || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// ParseAPIKey splits an X-Api-Key value, qak_<keyId>.<secret>.
func ParseAPIKey(v string) (keyID, secret string, ok bool) {
	rest, found := strings.CutPrefix(v, "qak_")
	if !found {
		return "", "", false
	}
	keyID, secret, found = strings.Cut(rest, ".")
	if !found || !isToken(keyID, maxKeyID) || !isToken(secret, 256) || strings.Contains(keyID, ".") {
		return "", "", false
	}
	return keyID, secret, true
}
