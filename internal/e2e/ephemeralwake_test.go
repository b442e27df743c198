package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/server"
	"github.com/queen-go/queen/internal/store/postgres"
)

// Long polls of an ephemeral queue parked on broker B cost no database
// statement while nothing is pushed, and a push on broker A wakes them.
func TestEphemeralPollsAcrossBrokers(t *testing.T) {
	u := testURL(t)
	counter := startCountingProxy(t, dbAddr(t, u))
	cfg := postgres.Config{URL: proxiedURL(u, counter.ln.Addr().String()), Schema: newSchema(t), PoolSize: 10}
	a := startBroker(t, "A", cfg, server.Config{})
	b := startBroker(t, "B", cfg, server.Config{})
	c := newClient(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	const q, polls = "eph-across", 20
	if status, body, err := c.do(ctx, "POST", a.url+"/api/v1/ephemeral", fmt.Sprintf(`{"name":%q}`, q)); err != nil ||
		status != http.StatusCreated {
		t.Fatalf("create: %d %s %v", status, body, err)
	}
	pops := func() int64 { return counter.countOf("DELETE FROM ephemeral_messages WHERE seq IN") }
	before := pops()
	type answer struct {
		status int
		body   []byte
		err    error
	}
	answers := make(chan answer, polls)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for range polls {
		wg.Go(func() {
			status, body, err := c.do(ctx, "GET", b.url+"/api/v1/ephemeral/"+q+"/pop?wait=true&timeout=60000", nil)
			if ctx.Err() == nil {
				answers <- answer{status, body, err}
			}
		})
	}
	// Each poll looks once, then parks.
	if !waitUntil(30*time.Second, 10*time.Millisecond, func() bool { return pops()-before >= polls }) {
		t.Fatalf("%d pop statements after %d polls started, want %d", pops()-before, polls, polls)
	}
	parked := pops()
	const window = 3 * time.Second
	time.Sleep(window) // an observation window, not a wait for a condition
	if d := pops() - parked; d != 0 {
		t.Errorf("%d parked ephemeral polls ran %d pop statements in %v with nothing pushed; want 0", polls, d, window)
	}
	select {
	case a := <-answers:
		t.Fatalf("a poll answered while nothing was pushed: %d %s %v", a.status, a.body, a.err)
	default:
	}

	if status, body, err := c.do(ctx, "POST", a.url+"/api/v1/ephemeral/push",
		fmt.Sprintf(`{"items":[{"queue":%q,"payload":"hi"}]}`, q)); err != nil || status != http.StatusCreated {
		t.Fatalf("push on A: %d %s %v", status, body, err)
	}
	select {
	case got := <-answers:
		var p struct {
			Messages []struct {
				Data json.RawMessage `json:"data"`
			} `json:"messages"`
		}
		if got.err != nil || got.status != http.StatusOK || json.Unmarshal(got.body, &p) != nil ||
			len(p.Messages) != 1 || string(p.Messages[0].Data) != `"hi"` {
			t.Fatalf("poll on B after a push on A: %d %s %v", got.status, got.body, got.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a push on A did not wake the polls parked on B within 10s")
	}
}

// countOf returns how many statements containing text were run.
func (p *countingProxy) countOf(text string) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n int64
	for s, c := range p.byText {
		if strings.Contains(s, text) {
			n += c
		}
	}
	return n
}
