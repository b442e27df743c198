package main

import (
	"testing"

	"github.com/queen-go/queen/client"
	"github.com/queen-go/queen/internal/testbroker"
)

func TestProducer(t *testing.T) {
	c, err := client.New(client.Config{URL: testbroker.SQLite(t)})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second push is all duplicates: nothing stored twice
		if err := run(t.Context(), c, 30); err != nil {
			t.Fatal(err)
		}
	}
	q, err := c.Queue(t.Context(), "orders")
	if err != nil || q.Totals.Total != 30 || len(q.Partitions) != 3 {
		t.Fatalf("queue: %v, %+v", err, q)
	}
}
