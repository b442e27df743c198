package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/testbroker"
)

// TestDeliveryVerbs lists a broker's delivery targets and a message's
// attempts (none yet) with the client verbs.
func TestDeliveryVerbs(t *testing.T) {
	base := testbroker.SQLite(t)
	env := map[string]string{"QUEEN_URL": base, "QUEEN_CONFIG": filepath.Join(t.TempDir(), "contexts.json")}
	resp, err := http.Post(base+"/api/v1/delivery/targets", "application/json", strings.NewReader(
		`{"queue":"orders","url":"https://hooks.example.com/in","paused":true,"auth":{"mode":"bearer","token":"t"}}`))
	if err != nil {
		t.Fatal(err)
	}
	var tg api.DeliveryTarget
	if err := json.NewDecoder(resp.Body).Decode(&tg); err != nil || resp.StatusCode != 201 {
		t.Fatalf("create: %d %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	ctx := t.Context()
	out, code := verb(t, ctx, env, "", "delivery", "targets")
	if code != 0 || !strings.Contains(out, tg.ID) || !strings.Contains(out, "bearer") || !strings.Contains(out, "paused") {
		t.Fatalf("delivery targets: exit %d\n%s", code, out)
	}
	out, code = verb(t, ctx, env, "", "delivery", "targets", "--queue", "other", "-o", "json")
	if code != 0 || strings.TrimSpace(out) != "[]" {
		t.Fatalf("delivery targets of another queue: exit %d %s", code, out)
	}
	out, code = verb(t, ctx, env, "", "delivery", "attempts", "orders", "019a0000-0000-7000-8000-000000000000", "-o", "json")
	if code != 0 || strings.TrimSpace(out) != "[]" {
		t.Fatalf("delivery attempts: exit %d %s", code, out)
	}
}
