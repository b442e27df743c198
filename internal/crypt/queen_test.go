package crypt

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"testing"
)

// Payloads sealed by Queen's own C++ broker (the fixture database of the
// real Queen, queue "secrets", QUEEN_ENCRYPTION_KEY below), as its jsonb
// column gives them back: keys reordered and spaced by PostgreSQL. An import
// of a Queen database keeps them sealed, so this package must open them.
func TestOpensWhatQueenSealed(t *testing.T) {
	const key = "4aa9885901e44cf04de64da380218e778dba8877630e3d2634b39b980531dd53"
	cases := []struct{ stored, want string }{
		{
			`{"iv": "kF1IJQFIrMuqwv3650XHLQ==", "authTag": "u4iMNGe50XT6KwJnjlgyPA==", "encrypted": "L2YDzeAMWQ8/gN8PoWLzYqxDWYWWGshMmU2Q5G3gkbh79dGAOiOtcVxzBxg5OuAI2aCpamAfz4IzVUezJIF6aLDQIrfP4ZtQQhsRyLxmZqJyr+YMi8J2RH7ZTzTETTsenrvNwvYVgZE="}`,
			`{"card": "4111 1111 1111 2001", "holder": "日本語のテキスト", "limit": 83665, "marker": "SEALED-02001"}`,
		},
		{
			`{"iv": "WgPYCaOCZCpeya/tQluaTQ==", "authTag": "ILgld9SxkndHc71duXJz2w==", "encrypted": "wLkMOmOvPQXdnNPW5BkupiWfyA2ete2QVtFfocfvsAXXHWu6UKi0dE75Hzoc9otVxX+PuA+yxOlO+ACJFpMtjR7Mfb0sTibiNv0iT3PbPSZla3uEcUrSrvmQozutkRO+"}`,
			`{"card": "4111 1111 1111 2022", "holder": "Ελληνικά", "limit": 11608, "marker": "SEALED-02022"}`,
		},
		{
			`{"iv": "8b0XCoDqYsHcUdG9TaXbKA==", "authTag": "s8+/wgIT3V17h5Wurms+mQ==", "encrypted": "yk6WFdUrHOEAlSTo0b48KOSaMIQnEezkcidOY0htTpY8X1oCITmZXneEhxQ7QgBnpP3z3uX6M5nByss8eR0ux7vQ9Mz1+F8LywO2AdM2ZOTBP0hs4yN7fpDhz/huIKwlIRiVBwM="}`,
			"{\"card\": \"4111 1111 1111 2023\", \"holder\": \"line sep \u2028 para \u2029\", \"limit\": 54924, \"marker\": \"SEALED-02023\"}",
		},
	}
	k, err := New(key)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		plain, ok := k.Open([]byte(c.stored))
		if !ok {
			t.Fatalf("case %d: Queen's sealed payload does not open", i)
		}
		var got, want any
		if err := json.Unmarshal(plain, &got); err != nil {
			t.Fatalf("case %d: plaintext is not JSON: %v: %q", i, err, plain)
		}
		if err := json.Unmarshal([]byte(c.want), &want); err != nil {
			t.Fatal(err)
		}
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		if !bytes.Equal(g, w) {
			t.Errorf("case %d: opened\n %s\nwant\n %s", i, g, w)
		}
	}
	// Another key opens none of them, and says so instead of failing.
	other, _ := New("00" + key[2:])
	if _, ok := other.Open([]byte(cases[0].stored)); ok {
		t.Error("a wrong key opened Queen's payload")
	}
}

// What this package seals, Queen's broker opens: the ciphertext is GCM's
// under the IV's first 12 bytes, whatever its last 4 are.
func TestSealsAsQueenDoes(t *testing.T) {
	const key = "4aa9885901e44cf04de64da380218e778dba8877630e3d2634b39b980531dd53"
	k, _ := New(key)
	stored, err := k.Seal([]byte(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	var s sealed
	if err := json.Unmarshal(stored, &s); err != nil {
		t.Fatal(err)
	}
	iv, _ := base64.StdEncoding.DecodeString(s.IV)
	iv[12] ^= 0xff // bytes Queen ignores
	s.IV = base64.StdEncoding.EncodeToString(iv)
	changed, _ := json.Marshal(s)
	if plain, ok := k.Open(changed); !ok || string(plain) != `{"a":1}` {
		t.Fatalf("sealed with more than the IV's first 12 bytes: %q %v", plain, ok)
	}
}
