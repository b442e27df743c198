// Command consumer reads the queue "orders" as the consumer group
// "billing" with Consume: four batches at once, leases renewed while a
// batch is processed, a graceful stop on Ctrl-C. It speaks to QUEEN_URL
// (default http://localhost:6632) with QUEEN_TOKEN.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"os/signal"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/client"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c, err := client.New(client.Config{URL: os.Getenv("QUEEN_URL"), Token: os.Getenv("QUEEN_TOKEN")})
	if err != nil {
		log.Fatal(err)
	}
	if err := run(ctx, c, func(string, int) {}); err != nil {
		log.Fatal(err)
	}
}

// run consumes until ctx ends, calling seen for every order billed.
func run(ctx context.Context, c *client.Client, seen func(customer string, number int)) error {
	return c.Consume(ctx, "orders", func(ctx context.Context, msgs []api.PopMessage) error {
		for i, m := range msgs {
			var o struct {
				Customer string `json:"customer"`
				Number   int    `json:"number"`
			}
			if err := json.Unmarshal(m.Data, &o); err != nil {
				// The messages before i are acknowledged; i and the rest
				// come back (and i goes to the dead-letter queue after
				// the queue's retryLimit).
				return &client.BatchError{Index: i, Err: err}
			}
			fmt.Printf("billing %s order %d\n", o.Customer, o.Number)
			seen(o.Customer, o.Number)
		}
		return nil // acknowledges the batch
	}, client.ConsumeOptions{Group: "billing", Concurrency: 4, BatchSize: 10})
}
