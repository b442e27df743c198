// Command producer pushes orders to the queue "orders", one partition per
// customer so that each customer's orders stay in order. It speaks to
// QUEEN_URL (default http://localhost:6632) with QUEEN_TOKEN.
package main

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/client"
)

type order struct {
	Customer string `json:"customer"`
	Number   int    `json:"number"`
	Cents    int    `json:"cents"`
}

func main() {
	c, err := client.New(client.Config{URL: os.Getenv("QUEEN_URL"), Token: os.Getenv("QUEEN_TOKEN")})
	if err != nil {
		log.Fatal(err)
	}
	if err := run(context.Background(), c, 100); err != nil {
		log.Fatal(err)
	}
}

// run pushes n orders of three customers in one request.
func run(ctx context.Context, c *client.Client, n int) error {
	items := make([]api.PushItem, 0, n)
	for i := range n {
		o := order{Customer: fmt.Sprint("customer-", i%3), Number: i, Cents: 100 + i}
		item, err := client.Item("orders", o)
		if err != nil {
			return err
		}
		item.Partition = o.Customer
		// A transactionId of our own makes the push safe to repeat.
		item.TransactionID = fmt.Sprint("order-", i)
		items = append(items, item)
	}
	verdicts, err := c.Push(ctx, items...)
	if err != nil {
		return err // a *client.PartialError names the items that failed
	}
	fmt.Printf("pushed %d orders\n", len(verdicts))
	return nil
}
