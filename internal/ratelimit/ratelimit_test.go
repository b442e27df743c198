package ratelimit

import (
	"fmt"
	"testing"
	"time"
)

func TestTakeRefillsAndNeverDebitsARefusal(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := New(Config{Default: Limit{Rate: 2, Burst: 3}, Now: func() time.Time { return now }})
	for i := 0; i < 3; i++ {
		if ok, _ := l.Take("t", 1); !ok {
			t.Fatalf("take %d refused within the burst", i)
		}
	}
	ok, wait := l.Take("t", 1)
	if ok || wait != 500*time.Millisecond || RetryAfterSeconds(wait) != 1 {
		t.Fatalf("take past the burst: %v %v, want refused, 500ms", ok, wait)
	}
	// Refusals debit nothing: many of them leave the bucket as it was.
	for i := 0; i < 10; i++ {
		l.Take("t", 1)
	}
	now = now.Add(500 * time.Millisecond)
	if ok, _ := l.Take("t", 1); !ok {
		t.Fatal("take after the refill was refused: a refusal debited")
	}
	// Another tenant has its own bucket.
	if ok, _ := l.Take("u", 3); !ok {
		t.Fatal("another tenant's first take refused")
	}
	// A cost above the burst costs the burst.
	now = now.Add(time.Hour)
	if ok, _ := l.Take("t", 100); !ok {
		t.Fatal("a batch larger than the burst refused on a full bucket")
	}
	ok, wait = l.Take("t", 3)
	if ok || wait != 1500*time.Millisecond || RetryAfterSeconds(wait) != 2 {
		t.Fatalf("take on an empty bucket: %v %v, want refused for 1.5s (Retry-After 2)", ok, wait)
	}
}

func TestOverrides(t *testing.T) {
	o, err := ParseOverrides(" 11111111-1111-1111-1111-111111111111=5:10 ,22222222-2222-2222-2222-222222222222=0.5:1")
	if err != nil || o["11111111-1111-1111-1111-111111111111"] != (Limit{Rate: 5, Burst: 10}) ||
		o["22222222-2222-2222-2222-222222222222"] != (Limit{Rate: 0.5, Burst: 1}) {
		t.Fatalf("ParseOverrides: %v, %v", o, err)
	}
	for _, bad := range []string{"x=1:1", "11111111-1111-1111-1111-111111111111=1", "11111111-1111-1111-1111-111111111111=0:1",
		"11111111-1111-1111-1111-111111111111=1:0"} {
		if _, err := ParseOverrides(bad); err == nil {
			t.Errorf("ParseOverrides(%q) accepted", bad)
		}
	}
	l := New(Config{Overrides: o})
	if ok, _ := l.Take("22222222-2222-2222-2222-222222222222", 1); !ok {
		t.Fatal("first take refused")
	}
	if ok, wait := l.Take("22222222-2222-2222-2222-222222222222", 1); ok || RetryAfterSeconds(wait) != 2 {
		t.Fatalf("second take: %v %v, want refused with Retry-After 2", ok, wait)
	}
}

// Tenants are any UUIDs requests name: the buckets of many one-off tenants
// must not pile up, and dropping them must not refill a bucket in use.
func TestFullBucketsAreDropped(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := New(Config{Default: Limit{Rate: 1, Burst: 2}, Now: func() time.Time { return now }})
	l.Take("busy", 2) // empty; refills in 2 s
	for i := 0; i <= pruneAbove; i++ {
		l.Take(fmt.Sprintf("once-%d", i), 1) // half full; refills in 1 s
	}
	now = now.Add(1500 * time.Millisecond)
	l.Take("another", 1) // above the threshold: prunes the full ones
	if n := len(l.buckets); n != 2 {
		t.Fatalf("%d buckets left after pruning, want 2 (busy, another)", n)
	}
	if ok, _ := l.Take("busy", 2); ok {
		t.Fatal("a bucket still refilling was dropped and came back full")
	}
}
