package spool

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/queen-go/queen/internal/store"
)

var update = flag.Bool("update", false, "rewrite testdata/v3 from the current writer")

const fixtureSegment = "00000000000000000001-000001.spool"

// openFixture opens a spool holding a copy of testdata/<version>, so that
// replay (which deletes segments) leaves the committed fixture alone.
func openFixture(t *testing.T, version string) *Spool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", version, fixtureSegment))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, fixtureSegment), b, 0o640); err != nil {
		t.Fatal(err)
	}
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func checkItems(t *testing.T, got, want []store.PushItem) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("replayed %d items, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if string(g.Payload) != string(w.Payload) {
			t.Errorf("item %d payload = %s, want %s", i, g.Payload, w.Payload)
		}
		g.Payload, w.Payload = nil, nil
		if !reflect.DeepEqual(g, w) {
			t.Errorf("item %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
}

// TestReplayV1Fixture replays a segment written by the build before record
// versions, whose records are encoding/json applied to store.PushItem.
func TestReplayV1Fixture(t *testing.T) {
	s := openFixture(t, "v1")
	if s.Pending() != 3 {
		t.Fatalf("pending = %d, want 3", s.Pending())
	}
	checkItems(t, collect(t, s, 2), []store.PushItem{
		{
			MessageID: "0192f0a0-0000-7000-8000-000000000001", Namespace: "orders", Partition: "acct-1",
			Payload: []byte(`{"n":1}`), Queue: "orders", Tenant: store.DefaultTenant, TraceID: "trace-1",
			TransactionID: "tx-1", Sealed: store.SealUnknown,
		},
		{
			MessageID: "0192f0a0-0000-7000-8000-000000000002", Namespace: "orders", Partition: "acct-1",
			Payload: []byte(`"two"`), ProducerSub: "alice", Queue: "orders", Tenant: store.DefaultTenant,
			TransactionID: "tx-2", Sealed: store.SealUnknown,
		},
		{
			MessageID: "0192f0a0-0000-7000-8000-000000000003", Namespace: "billing", Partition: "Default",
			Payload: []byte(`null`), Queue: "billing.invoices.eu", Task: "invoices", Tenant: store.DefaultTenant,
			TransactionID: "tx-3", Sealed: store.SealUnknown,
		},
	})
}

// v2Items are the items of testdata/v2: every field set somewhere, a
// payload encoding/json would have escaped, and a record without a tenant.
func v2Items() []store.PushItem {
	return []store.PushItem{
		{
			MessageID: "0192f0a0-0000-7000-8000-000000000011", Namespace: "orders", Partition: "acct-1",
			Payload:     []byte(`{"html":"<a href=\"x\">&amp;</a>","text":"é✓\u2028","n":[1,2.5e3,null,true]}`),
			ProducerSub: "alice", Queue: "orders", Task: "checkout", Tenant: "5b0c2f1e-8a8f-4a57-9d7e-3f1f6b2b9c10",
			TraceID: "trace-11", TransactionID: "tx-11",
		},
		{
			MessageID: "0192f0a0-0000-7000-8000-000000000012", Partition: "Default", Payload: []byte(`null`),
			Queue: "billing.invoices.eu", Tenant: store.DefaultTenant, TransactionID: "tx-12",
		},
		{
			MessageID: "0192f0a0-0000-7000-8000-000000000013", Partition: "pä \"q\"", Payload: []byte(`"a string"`),
			Queue: "orders", TransactionID: "tx-13",
		},
	}
}

// v3Items are the items of testdata/v3: those of version 2 with their
// seals, one of them sealed by the broker.
func v3Items() []store.PushItem {
	items := v2Items()
	items[0].Sealed = store.SealBound
	items[0].Payload = []byte(`{"encrypted":"AAAA","iv":"AAAAAAAAAAAAAAAAAAAAAA==","authTag":"AAAAAAAAAAAAAAAAAAAAAA=="}`)
	items[1].Sealed = store.SealNone
	return items
}

// TestV3FixtureMatchesWriter fails when Append no longer writes exactly the
// committed version 3 bytes: a format change must come with a new version
// (and a fixture of its own), not alter version 3 in place. Run with
// -update only when creating the fixture.
func TestV3FixtureMatchesWriter(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Append(v3Items()); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(s.cur.Name())
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	name := filepath.Join("testdata", "v3", fixtureSegment)
	if *update {
		if err := os.MkdirAll(filepath.Dir(name), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, got, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Append wrote\n%q\nthe version 3 fixture holds\n%q", got, want)
	}
}

// TestReplayV2Fixture: version 2 did not record seals, so its items come
// back as SealUnknown for the broker to resolve.
func TestReplayV2Fixture(t *testing.T) {
	s := openFixture(t, "v2")
	want := v2Items()
	want[2].Tenant = store.DefaultTenant // written explicitly in its place
	for i := range want {
		want[i].Sealed = store.SealUnknown
	}
	checkItems(t, collect(t, s, 10), want)
}

func TestReplayV3Fixture(t *testing.T) {
	s := openFixture(t, "v3")
	want := v3Items()
	want[2].Tenant = store.DefaultTenant // written explicitly in its place
	checkItems(t, collect(t, s, 10), want)
}

// TestDecodeV3RefusesUnknownSeal: a seal this build does not know is a
// damaged record, never an item stored with a guessed seal.
func TestDecodeV3RefusesUnknownSeal(t *testing.T) {
	for _, sealed := range []string{"3", "255", "-1", "1000"} {
		if _, err := decodeRecord([]byte(`{"v":3,"queue":"q","sealed":` + sealed + `,"payload":{}}`)); err == nil ||
			errors.Is(err, ErrUnknownVersion) {
			t.Errorf("sealed %s: err = %v, want a decode error", sealed, err)
		}
	}
}

// TestDecodeV1WithTenant covers records written by builds that had the
// Tenant field but not yet versioned records.
func TestDecodeV1WithTenant(t *testing.T) {
	it, err := decodeRecord([]byte(`{"MessageID":"m","Partition":"p","Payload":"e30=","Queue":"q","Tenant":"t-1","TransactionID":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	if it.Tenant != "t-1" || it.Queue != "q" || it.Partition != "p" || string(it.Payload) != "{}" {
		t.Fatalf("decoded %+v", it)
	}
}

func TestDecodeUnknownVersion(t *testing.T) {
	_, err := decodeRecord([]byte(`{"v":4,"queue":"q","payload":{}}`))
	if !errors.Is(err, ErrUnknownVersion) {
		t.Fatalf("err = %v, want ErrUnknownVersion", err)
	}
	t.Log(err)
}

func TestAppendRefusesInvalidPayload(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Append([]store.PushItem{{Queue: "q", TransactionID: "x", Payload: []byte(`{"a":`)}}); err == nil {
		t.Fatal("Append took a payload that is not JSON")
	}
	if s.Pending() != 0 {
		t.Fatalf("pending = %d after a refused append", s.Pending())
	}
}
