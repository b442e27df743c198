package ingress

import (
	"net/http"
	"strconv"
	"testing"
)

func signedHeader(keyID, ts, nonce, sha, sig string) http.Header {
	h := http.Header{}
	for _, kv := range [][2]string{{HeaderKeyID, keyID}, {HeaderTimestamp, ts}, {HeaderNonce, nonce},
		{HeaderContentSHA256, sha}, {HeaderSignature, sig}} {
		if kv[1] != "" {
			h.Set(kv[0], kv[1])
		}
	}
	return h
}

// TestSignRoundTrip signs a request as a producer would and verifies it,
// and checks that each part of the canonical string matters.
func TestSignRoundTrip(t *testing.T) {
	body := []byte(`{"a":1}`)
	req, _ := http.NewRequest("POST", "http://x/ingress/v1/orders?src=a", nil)
	SignRequest(req, body, "k1", "s3cret", 1700000000, "nonce-1")
	s, err := ParseSigned(req.Header)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Verify("s3cret", "POST", "/ingress/v1/orders", "src=a", body) {
		t.Fatal("a signed request does not verify")
	}
	for name, ok := range map[string]bool{
		"secret": s.Verify("other", "POST", "/ingress/v1/orders", "src=a", body),
		"method": s.Verify("s3cret", "PUT", "/ingress/v1/orders", "src=a", body),
		"path":   s.Verify("s3cret", "POST", "/ingress/v1/order", "src=a", body),
		"query":  s.Verify("s3cret", "POST", "/ingress/v1/orders", "src=b", body),
		"body":   s.Verify("s3cret", "POST", "/ingress/v1/orders", "src=a", []byte(`{"a":2}`)),
	} {
		if ok {
			t.Errorf("a changed %s still verifies", name)
		}
	}
	s.Nonce = "nonce-2"
	if s.Verify("s3cret", "POST", "/ingress/v1/orders", "src=a", body) {
		t.Error("a changed nonce still verifies")
	}
	// A known vector, so that the documented examples can be checked.
	want := Sign("s3cret", "QUEUEY-HMAC-SHA256\nPOST\n/ingress/v1/orders\n\n"+BodySHA(body)+"\nk1\n1700000000\nn")
	if got := Sign("s3cret", Canonical("POST", "/ingress/v1/orders", "", Signed{KeyID: "k1", Timestamp: 1700000000,
		Nonce: "n", BodySHA: BodySHA(body)})); got != want {
		t.Errorf("canonical string: %s, want %s", got, want)
	}
}

func TestParseSigned(t *testing.T) {
	hex := BodySHA(nil)
	for _, tc := range []struct {
		name string
		h    http.Header
		ok   bool
	}{
		{"good", signedHeader("k", "1700000000", "n", hex, hex), true},
		{"no signature", signedHeader("k", "1700000000", "n", hex, ""), false},
		{"upper hex", signedHeader("k", "1700000000", "n", hex, "A"+hex[1:]), false},
		{"short hash", signedHeader("k", "1700000000", "n", hex[:63], hex), false},
		{"negative time", signedHeader("k", "-1", "n", hex, hex), false},
		{"huge time", signedHeader("k", "99999999999999", "n", hex, hex), false},
		{"space in key", signedHeader("k k", "1", "n", hex, hex), false},
		{"no nonce", signedHeader("k", "1", "", hex, hex), false},
	} {
		_, err := ParseSigned(tc.h)
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	h := signedHeader("k", "1", "n", hex, hex)
	h.Add(HeaderNonce, "again")
	if _, err := ParseSigned(h); err == nil {
		t.Error("a repeated header is accepted")
	}
}

func TestParseAPIKey(t *testing.T) {
	if id, s, ok := ParseAPIKey("qak_abc.def"); !ok || id != "abc" || s != "def" {
		t.Errorf("good key: %q %q %v", id, s, ok)
	}
	for _, bad := range []string{"", "abc.def", "qak_abc", "qak_.def", "qak_abc.", "qak_a b.c", "qak_abc.d ef"} {
		if _, _, ok := ParseAPIKey(bad); ok {
			t.Errorf("%q accepted", bad)
		}
	}
}

// FuzzParseSigned feeds arbitrary header values to the decoder: it never
// panics, and what it accepts is well formed and verifies only when signed.
func FuzzParseSigned(f *testing.F) {
	h := BodySHA(nil)
	f.Add("k1", "1700000000", "n", h, h)
	f.Add("", "", "", "", "")
	f.Add("k\x00", "+1", "n\n", h+"0", "zz")
	f.Fuzz(func(t *testing.T, keyID, ts, nonce, sha, sig string) {
		s, err := ParseSigned(signedHeader(keyID, ts, nonce, sha, sig))
		if err != nil {
			return
		}
		if !isToken(s.KeyID, maxKeyID) || !isToken(s.Nonce, maxNonce) || !isHex64(s.BodySHA) || !isHex64(s.Signature) ||
			s.Timestamp < 0 || strconv.FormatInt(s.Timestamp, 10) == "" {
			t.Fatalf("accepted a malformed value: %+v", s)
		}
		if s.Verify("secret", "POST", "/p", "", nil) && s.Signature != Sign("secret", Canonical("POST", "/p", "", s)) {
			t.Fatal("verified a signature that does not sign the request")
		}
		ParseAPIKey(keyID + "." + nonce)
	})
}
