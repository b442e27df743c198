package main

import (
	"fmt"
	"testing"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/client"
	"github.com/queen-go/queen/internal/testbroker"
)

func TestPipelineStage(t *testing.T) {
	c, err := client.New(client.Config{URL: testbroker.SQLite(t)})
	if err != nil {
		t.Fatal(err)
	}
	var items []api.PushItem
	for i := range 20 {
		it, _ := client.Item("orders", map[string]int{"number": i})
		items = append(items, it)
	}
	if _, err := c.Push(t.Context(), items...); err != nil {
		t.Fatal(err)
	}
	moved := 0
	for moved < 20 {
		n, err := stage(t.Context(), c)
		if err != nil {
			t.Fatal(err)
		}
		moved += n
	}
	got := 0
	for got < 20 {
		res, err := c.Pop(t.Context(), "enriched", client.PopOptions{Batch: 50, AutoAck: true})
		if err != nil || res == nil {
			t.Fatalf("enriched: %v after %d", err, got)
		}
		for _, m := range res.Messages {
			if want := fmt.Sprintf(`"number":%d`, got); !contains(string(m.Data), want) {
				t.Errorf("message %d: %s", got, m.Data)
			}
			got++
		}
	}
	if res, _ := c.Pop(t.Context(), "orders", client.PopOptions{Group: "enrich"}); res != nil {
		t.Error("an order was left unacknowledged")
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
