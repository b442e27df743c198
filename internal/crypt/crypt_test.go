package crypt

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
)

const (
	keyA = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	keyB = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100"
)

func TestSealOpen(t *testing.T) {
	k, err := New(keyA)
	if err != nil {
		t.Fatal(err)
	}
	payload := []byte(`{"order":42,"note":"secret text"}`)
	stored, err := k.Seal(payload)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(stored, []byte("secret")) {
		t.Fatalf("stored form holds the plaintext: %s", stored)
	}
	var shape map[string]string
	if err := json.Unmarshal(stored, &shape); err != nil || len(shape) != 3 ||
		shape["encrypted"] == "" || shape["iv"] == "" || shape["authTag"] == "" {
		t.Fatalf("stored form %s is not {encrypted, iv, authTag}", stored)
	}
	got, ok := k.Open(stored)
	if !ok || !bytes.Equal(got, payload) {
		t.Fatalf("Open: %q %v, want the payload back", got, ok)
	}
	again, _ := k.Seal(payload)
	if bytes.Equal(again, stored) {
		t.Error("two seals of one payload are equal: the IV is not random")
	}
}

// The stored shape is Queen's: a 16-byte IV, the tag apart, standard base64.
// Opening something sealed with the full 16-byte IV as nonce, the way Queen's
// Node code and this package's earlier versions did, proves it still opens.
func TestQueenShape(t *testing.T) {
	key, _ := hex.DecodeString(keyA)
	block, _ := aes.NewCipher(key)
	gcm, _ := cipher.NewGCMWithNonceSize(block, 16)
	iv := bytes.Repeat([]byte{7}, 16)
	box := gcm.Seal(nil, iv, []byte(`"hello"`), nil)
	stored, _ := json.Marshal(map[string]string{
		"encrypted": base64.StdEncoding.EncodeToString(box[:len(box)-16]),
		"iv":        base64.StdEncoding.EncodeToString(iv),
		"authTag":   base64.StdEncoding.EncodeToString(box[len(box)-16:]),
	})
	k, _ := New(keyA)
	if got, ok := k.Open(stored); !ok || string(got) != `"hello"` {
		t.Fatalf("Open of Queen's shape: %q %v", got, ok)
	}
}

func TestRotation(t *testing.T) {
	oldRing, _ := New(keyA)
	stored, _ := oldRing.Seal([]byte(`[1,2,3]`))
	rotated, err := New(keyB, keyA)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := rotated.Open(stored); !ok || string(got) != `[1,2,3]` {
		t.Fatalf("a rotated keyring opens what the old key sealed: %q %v", got, ok)
	}
	fresh, _ := rotated.Seal([]byte(`true`))
	if _, ok := oldRing.Open(fresh); ok {
		t.Error("the rotated keyring sealed with the old key")
	}
	withoutOld, _ := New(keyB)
	if _, ok := withoutOld.Open(stored); ok {
		t.Error("a keyring without the old key opened its payload")
	}
}

func TestOpenLeavesOthersAlone(t *testing.T) {
	k, _ := New(keyA)
	stored, _ := k.Seal([]byte(`1`))
	var shape map[string]string
	_ = json.Unmarshal(stored, &shape)
	tampered := map[string]string{"encrypted": shape["encrypted"], "iv": shape["iv"],
		"authTag": base64.StdEncoding.EncodeToString(make([]byte, 16))}
	bad, _ := json.Marshal(tampered)
	extra, _ := json.Marshal(map[string]string{"encrypted": shape["encrypted"], "iv": shape["iv"],
		"authTag": shape["authTag"], "more": "x"})
	for _, b := range [][]byte{[]byte(`{"n":1}`), []byte(`"authTag encrypted iv"`), []byte(`null`), bad, extra,
		[]byte(`{"encrypted":"!!","iv":"AA==","authTag":"AA=="}`)} {
		if got, ok := k.Open(b); ok {
			t.Errorf("Open(%s) = %q, want it left alone", b, got)
		}
	}
}

func TestBadKeys(t *testing.T) {
	for _, key := range []string{"", "abc", strings.Repeat("zz", 32), keyA + "00"} {
		if _, err := New(key); err == nil {
			t.Errorf("New(%q) accepted a bad key", key)
		}
	}
	if _, err := New(keyA, "nope"); err == nil || !strings.Contains(err.Error(), "old encryption key 1") {
		t.Errorf("a bad old key: %v, want an error naming it", err)
	}
}

func BenchmarkSealOpen(b *testing.B) {
	k, _ := New(keyA)
	payload := []byte(`{"order":42,"items":[1,2,3],"note":"` + strings.Repeat("x", 100) + `"}`)
	b.Run("seal", func(b *testing.B) {
		b.SetBytes(int64(len(payload)))
		for b.Loop() {
			if _, err := k.Seal(payload); err != nil {
				b.Fatal(err)
			}
		}
	})
	stored, _ := k.Seal(payload)
	b.Run("open", func(b *testing.B) {
		b.SetBytes(int64(len(payload)))
		for b.Loop() {
			if _, ok := k.Open(stored); !ok {
				b.Fatal("open failed")
			}
		}
	})
}

// A bound seal opens only with the tenant and queue it was sealed for,
// never unbound, and keeps opening after the key is rotated.
func TestBoundSeal(t *testing.T) {
	const old, cur = "4aa9885901e44cf04de64da380218e778dba8877630e3d2634b39b980531dd53",
		"1111111111111111111111111111111111111111111111111111111111111111"
	k, _ := New(old)
	ad := AD("tenant-a", "orders")
	stored, err := k.SealFor([]byte(`{"secret":1}`), ad)
	if err != nil {
		t.Fatal(err)
	}
	if !Sealed(stored) {
		t.Fatalf("a bound seal is not the stored shape: %s", stored)
	}
	if plain, ok := k.OpenFor(stored, ad); !ok || string(plain) != `{"secret":1}` {
		t.Fatalf("OpenFor with its own ad: %q %v", plain, ok)
	}
	for name, other := range map[string][]byte{
		"another tenant": AD("tenant-b", "orders"), "another queue": AD("tenant-a", "orders2"),
		"nothing": nil, "the names run together": AD("tenant-ao", "rders"),
	} {
		if _, ok := k.OpenFor(stored, other); ok {
			t.Errorf("a seal bound to tenant-a/orders opened with %s", name)
		}
	}
	if _, ok := k.Open(stored); ok {
		t.Error("Open (unbound) opened a bound seal")
	}
	rotated, _ := New(cur, old)
	if plain, ok := rotated.OpenFor(stored, ad); !ok || string(plain) != `{"secret":1}` {
		t.Fatalf("after rotation the old key no longer opens: %q %v", plain, ok)
	}
	// An unbound seal does not open as a bound one either.
	unbound, _ := k.Seal([]byte(`{"secret":1}`))
	if _, ok := k.OpenFor(unbound, ad); ok {
		t.Error("OpenFor opened an unbound seal")
	}
}

func TestADIsInjective(t *testing.T) {
	seen := map[string]string{}
	for _, p := range [][2]string{{"a", "bc"}, {"ab", "c"}, {"", "abc"}, {"abc", ""}, {"a\x00", "b"}, {"a", "\x00b"}} {
		k := string(AD(p[0], p[1]))
		if prev, dup := seen[k]; dup {
			t.Fatalf("AD(%q, %q) equals AD of %s", p[0], p[1], prev)
		}
		seen[k] = p[0] + "/" + p[1]
	}
}
