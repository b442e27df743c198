// Package crypt encrypts message payloads at rest, for queues configured
// with encryptionEnabled. It speaks Queen's stored shape, so that a database
// written by one can be read by the other: AES-256-GCM with a random 16-byte
// IV per message and a 16-byte tag, the ciphertext of the payload's JSON
// text stored in its place as
//
//	{"encrypted":"<base64 ciphertext>","iv":"<base64 IV>","authTag":"<base64 tag>"}
//
// (standard base64). Queen's C++ broker hands the 16-byte IV to OpenSSL
// without setting the IV length, so OpenSSL uses GCM's standard 12-byte
// nonce: the IV's first 12 bytes (its last 4 take no part). This package
// seals the same way, so that Queen opens what it seals, and opens both
// that and the full 16-byte nonce that its own earlier versions sealed
// with. A Keyring holds the current key, which seals, and any
// number of earlier ones, which still open what they sealed, so that a key
// can be rotated while messages sealed under the old one wait in queues. The
// broker seals on push, before the store (and before the disk spool), and
// opens on pop, after the store; neither the HTTP layer nor the storage
// engines see keys.
//
// Bound seals. Queen's seal binds nothing: a sealed blob opens wherever it
// is presented. What this broker seals for a queue now carries associated
// data naming the tenant and the queue (SealFor, OpenFor, AD), so that a
// blob copied into another queue, or another tenant's, does not open there.
// The stored shape is the same; which seal a stored payload carries is not
// read from its shape but recorded beside it (the messages' sealed column).
package crypt

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Sizes of the stored shape, as Queen has them.
const (
	KeyHexLen = 64 // a key is 32 bytes written as 64 hex characters
	ivSize    = 16
	tagSize   = 16
)

// Keyring seals with the current key and opens with any of its keys. It is
// safe for concurrent use.
type Keyring struct {
	keys []aeads // the current key first, then the earlier ones
}

// aeads is one key in both of the nonce sizes it may have sealed with.
type aeads struct {
	queen cipher.AEAD // the IV's first 12 bytes, as Queen's broker seals
	full  cipher.AEAD // all 16 bytes of the IV, as this package once sealed
}

// ParseKey reads a key of 64 hex characters.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if len(s) != KeyHexLen {
		return nil, fmt.Errorf("want %d hex characters (32 bytes), got %d characters", KeyHexLen, len(s))
	}
	key, err := hex.DecodeString(s)
	if err != nil {
		return nil, errors.New("not hexadecimal")
	}
	return key, nil
}

// New returns a keyring sealing with current and opening with current and
// every key of old (each 64 hex characters).
func New(current string, old ...string) (*Keyring, error) {
	k := &Keyring{}
	for i, s := range append([]string{current}, old...) {
		key, err := ParseKey(s)
		if err != nil {
			if i == 0 {
				return nil, fmt.Errorf("encryption key: %w", err)
			}
			return nil, fmt.Errorf("old encryption key %d: %w", i, err)
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, err // cannot happen: the key is 32 bytes
		}
		queen, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		full, err := cipher.NewGCMWithNonceSize(block, ivSize)
		if err != nil {
			return nil, err
		}
		k.keys = append(k.keys, aeads{queen: queen, full: full})
	}
	return k, nil
}

// sealed is the stored shape.
type sealed struct {
	Encrypted string `json:"encrypted"`
	IV        string `json:"iv"`
	AuthTag   string `json:"authTag"`
}

// Seal encrypts a payload (its JSON text) with the current key and returns
// the stored shape, binding nothing, as Queen seals.
func (k *Keyring) Seal(payload []byte) ([]byte, error) { return k.SealFor(payload, nil) }

// adPrefix starts every associated data of AD: it names the purpose and its
// version, so that a seal made for messages can never be taken for another.
const adPrefix = "queen-go/message/v2\x00"

// AD is the associated data binding a message's seal to the tenant and the
// queue it was sealed for: a blob sealed with it opens only with the same
// tenant and queue name. The names are length-prefixed, so no two pairs give
// the same bytes.
func AD(tenant, queue string) []byte {
	ad := make([]byte, 0, len(adPrefix)+2*binary.MaxVarintLen64+len(tenant)+len(queue))
	ad = append(ad, adPrefix...)
	ad = binary.AppendUvarint(ad, uint64(len(tenant)))
	ad = append(ad, tenant...)
	ad = binary.AppendUvarint(ad, uint64(len(queue)))
	return append(ad, queue...)
}

// SealFor seals payload as Seal does, binding ad (see AD): only OpenFor with
// the same ad opens it.
func (k *Keyring) SealFor(payload, ad []byte) ([]byte, error) {
	iv := make([]byte, ivSize)
	if _, err := rand.Read(iv); err != nil {
		return nil, fmt.Errorf("encrypt: %w", err)
	}
	out := k.keys[0].queen.Seal(nil, iv[:k.keys[0].queen.NonceSize()], payload, ad) // ciphertext, then the tag
	ct, tag := out[:len(out)-tagSize], out[len(out)-tagSize:]
	return json.Marshal(sealed{
		Encrypted: base64.StdEncoding.EncodeToString(ct),
		IV:        base64.StdEncoding.EncodeToString(iv),
		AuthTag:   base64.StdEncoding.EncodeToString(tag),
	})
}

// Open returns the payload sealed in stored, trying every key of the
// keyring. It reports false when stored is not the stored shape (exactly the
// three keys, as Queen decides) or when no key opens it; the caller then
// keeps stored as it is. It opens only what binds nothing (Queen's seal,
// Seal): a bound seal needs OpenFor.
func (k *Keyring) Open(stored []byte) ([]byte, bool) { return k.OpenFor(stored, nil) }

// OpenFor opens what SealFor sealed with ad, trying every key of the
// keyring; a nil ad opens what binds nothing, as Open. It reports false as
// Open does, and when ad is not the one sealed with.
func (k *Keyring) OpenFor(stored, ad []byte) ([]byte, bool) {
	if !Sealed(stored) {
		return nil, false
	}
	var fields map[string]string
	if err := json.Unmarshal(stored, &fields); err != nil || len(fields) != 3 {
		return nil, false
	}
	ct, err1 := base64.StdEncoding.DecodeString(fields["encrypted"])
	iv, err2 := base64.StdEncoding.DecodeString(fields["iv"])
	tag, err3 := base64.StdEncoding.DecodeString(fields["authTag"])
	if err1 != nil || err2 != nil || err3 != nil || len(iv) != ivSize || len(tag) != tagSize {
		return nil, false
	}
	box := append(ct, tag...)
	for _, a := range k.keys {
		if plain, err := a.queen.Open(nil, iv[:a.queen.NonceSize()], box, ad); err == nil {
			return plain, true
		}
		// The full 16-byte nonce only ever sealed unbound (earlier builds).
		if ad != nil {
			continue
		}
		if plain, err := a.full.Open(nil, iv, box, nil); err == nil {
			return plain, true
		}
	}
	return nil, false
}

// Sealed reports, cheaply, whether b may be the stored shape: a JSON object
// naming the three keys. Payloads that are not pass through pops untouched
// without being parsed.
func Sealed(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{' && bytes.Contains(b, []byte(`"authTag"`)) &&
		bytes.Contains(b, []byte(`"encrypted"`)) && bytes.Contains(b, []byte(`"iv"`))
}
