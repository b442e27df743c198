package main

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/client"
	"github.com/queen-go/queen/internal/testbroker"
)

func TestConsumer(t *testing.T) {
	c, err := client.New(client.Config{URL: testbroker.SQLite(t)})
	if err != nil {
		t.Fatal(err)
	}
	var items []api.PushItem
	for i := range 30 {
		it, _ := client.Item("orders", map[string]any{"customer": fmt.Sprint("c", i%3), "number": i})
		it.Partition = fmt.Sprint("c", i%3)
		items = append(items, it)
	}
	if _, err := c.Push(t.Context(), items...); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	var mu sync.Mutex
	last := map[string]int{"c0": -1, "c1": -1, "c2": -1}
	n := 0
	err = run(ctx, c, func(customer string, number int) {
		mu.Lock()
		defer mu.Unlock()
		if number <= last[customer] {
			t.Errorf("%s: order %d after %d", customer, number, last[customer])
		}
		last[customer] = number
		if n++; n == 30 {
			cancel()
		}
	})
	if err != nil || n != 30 {
		t.Fatalf("run: %v after %d orders", err, n)
	}
}
