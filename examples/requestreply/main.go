// Command requestreply asks a service a question and waits for its
// answer over an ephemeral queue: the service consumes "rpc.add", the
// caller's Request names a fresh ephemeral queue for the reply. Both run
// here; in production they are separate programs. It speaks to QUEEN_URL
// (default http://localhost:6632) with QUEEN_TOKEN.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/client"
)

type sum struct{ A, B int }

func main() {
	c, err := client.New(client.Config{URL: os.Getenv("QUEEN_URL"), Token: os.Getenv("QUEEN_TOKEN")})
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go serve(ctx, c)
	got, err := ask(ctx, c, 2, 3)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("2 + 3 =", got)
}

// serve answers every request of rpc.add until ctx ends.
func serve(ctx context.Context, c *client.Client) error {
	return c.Consume(ctx, "rpc.add", func(ctx context.Context, msgs []api.PopMessage) error {
		for _, m := range msgs {
			var env client.Envelope
			var q sum
			if err := json.Unmarshal(m.Data, &env); err != nil {
				return err
			}
			if err := json.Unmarshal(env.Body, &q); err != nil {
				return err
			}
			if err := c.Reply(ctx, m, q.A+q.B); err != nil {
				return err
			}
		}
		return nil
	}, client.ConsumeOptions{Group: "adders", WaitTimeout: 5 * time.Second})
}

// ask sends one request and waits for its reply.
func ask(ctx context.Context, c *client.Client, a, b int) (int, error) {
	raw, err := c.Request(ctx, "rpc.add", sum{a, b}, 10*time.Second)
	if err != nil {
		return 0, err
	}
	var n int
	return n, json.Unmarshal(raw, &n)
}
