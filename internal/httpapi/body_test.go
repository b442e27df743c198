package httpapi

import (
	"bytes"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
)

// TestReadBodyFollowsArrival: the Content-Length is the client's word, not
// bytes received. A request that declares 1 MiB and sends 10 bytes (then
// stalls or goes away) must not cost the broker 1 MiB: 800 such requests
// reserved 825 MiB of heap before the buffer was capped.
func TestReadBodyFollowsArrival(t *testing.T) {
	const declared, sent, requests = 1 << 20, 10, 50
	src := strings.Repeat("x", sent)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range requests {
		r := httptest.NewRequest("POST", "/api/v1/push", strings.NewReader(src))
		r.ContentLength = declared
		if _, err := readBody(r); err != nil {
			t.Fatal(err) // a short body reads as what came; net/http reports the shortfall itself
		}
	}
	runtime.ReadMemStats(&after)
	perRequest := (after.TotalAlloc - before.TotalAlloc) / requests
	// Generous: the cap is 64 KiB plus bytes.MinRead; 1 MiB is what the
	// declared length would have reserved.
	if perRequest > 256<<10 {
		t.Fatalf("a body declaring %d bytes and sending %d allocated %d bytes per request", declared, sent, perRequest)
	}

	// A body that does arrive in full is read in full, its buffer grown
	// with it.
	body := bytes.Repeat([]byte("y"), 3<<20)
	r := httptest.NewRequest("POST", "/api/v1/push", bytes.NewReader(body))
	got, err := readBody(r)
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("a 3 MiB body: read %d bytes, %v", len(got), err)
	}
}
