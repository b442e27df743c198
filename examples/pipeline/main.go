// Command pipeline is one stage of a pipeline: it pops orders from
// "orders" as the group "enrich", and for every batch acknowledges it and
// pushes the enriched orders to "enriched" in one transaction, so that a
// crash can neither lose an order nor forward it twice. It speaks to
// QUEEN_URL (default http://localhost:6632) with QUEEN_TOKEN.
package main

import (
	"context"
	"encoding/json"
	"log"
	"os"
	"os/signal"
	"time"

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
	for ctx.Err() == nil {
		if _, err := stage(ctx, c); err != nil && ctx.Err() == nil {
			log.Print(err)
			time.Sleep(time.Second)
		}
	}
}

// stage moves one batch on and returns how many messages it moved.
func stage(ctx context.Context, c *client.Client) (int, error) {
	res, err := c.Pop(ctx, "orders", client.PopOptions{Group: "enrich", Batch: 50, Wait: true, Timeout: 5 * time.Second})
	if err != nil || res == nil {
		return 0, err
	}
	ops := make([]api.TransactionOperation, 0, len(res.Messages)+1)
	var out []api.PushItem
	for _, m := range res.Messages {
		var o map[string]any
		if err := json.Unmarshal(m.Data, &o); err != nil {
			return 0, err
		}
		o["enrichedAt"] = time.Now().UTC().Format(time.RFC3339)
		item, err := client.Item("enriched", o)
		if err != nil {
			return 0, err
		}
		item.Partition = m.Partition // keeps each partition's order downstream
		// The transactionId is derived from the input's: should the
		// stage ever run twice on a message, the second push is a
		// duplicate.
		item.TransactionID = "enriched-" + m.TransactionID
		out = append(out, item)
	}
	for _, a := range client.Acks(res.Messages, api.AckCompleted, "") {
		ops = append(ops, client.AckOp(a))
	}
	ops = append(ops, client.PushOp(out...))
	req := api.TransactionRequest{Operations: ops}
	if res.LeaseID != nil {
		// Nothing commits if the lease expired meanwhile: another
		// worker owns the batch now.
		req.RequiredLeases = []string{*res.LeaseID}
	}
	if _, err := c.Transaction(ctx, req); err != nil {
		// Rolled back (errors.Is(err, client.ErrPartial), or an
		// *api.Error): nothing was acknowledged or pushed, and the batch
		// comes back when its lease ends.
		return 0, err
	}
	return len(res.Messages), nil
}
