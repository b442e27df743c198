package postgres

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/apitest"
	"github.com/queen-go/queen/internal/server"
)

// Two brokers on one schema hear each other's wake-ups, and the
// shared-state route of each names the other as a peer with what it heard.
func TestSharedStateTwoBrokers(t *testing.T) {
	schema := newSchema(t)
	a := apitest.StartServer(t, openStore(t, schema, 4), server.Config{Version: "0.0.0-two"})
	b := apitest.StartServer(t, openStore(t, schema, 4), server.Config{Version: "0.0.0-two"})
	type state struct {
		Running   bool   `json:"running"`
		ServerID  string `json:"server_id"`
		Transport struct {
			PeerCount int `json:"peer_count"`
			Peers     []struct {
				ServerID string `json:"server_id"`
				Alive    bool   `json:"alive"`
			} `json:"peers"`
			Sent     int64 `json:"messages_sent"`
			Received int64 `json:"messages_received"`
		} `json:"transport"`
		Health struct {
			Alive int `json:"servers_alive"`
		} `json:"server_health"`
	}
	get := func(base string) state {
		t.Helper()
		resp, err := http.Get(base + "/api/v1/system/shared-state")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st state
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			t.Fatal(err)
		}
		return st
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Post(a+"/api/v1/push", "application/json",
			strings.NewReader(`{"items":[{"queue":"shared-state","payload":1}]}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		sa, sb := get(a), get(b)
		if sa.Transport.Sent > 0 && sb.Transport.Received > 0 && sb.Transport.PeerCount == 1 {
			if p := sb.Transport.Peers[0]; p.ServerID != sa.ServerID || !p.Alive || sb.Health.Alive != 1 {
				t.Fatalf("b's peer %+v (alive %d), want a (%s) alive", p, sb.Health.Alive, sa.ServerID)
			}
			if !sb.Running || sa.ServerID == sb.ServerID {
				t.Fatalf("running %v, ids %s %s", sb.Running, sa.ServerID, sb.ServerID)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("b never heard a: a %+v, b %+v", sa, sb)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
