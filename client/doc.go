// Package client is a Go client of Queen's HTTP/JSON API, as queen-go and
// Queen itself serve it: push, pop, acknowledge, extend leases, commit
// transactions, and Consume, a loop that pops batches with several
// goroutines, renews their leases while a handler runs, acknowledges what
// the handler did and stops gracefully. The bodies are package api's wire
// types; importing the package compiles in no part of the server.
//
// A consumer in a few lines:
//
//	c, err := client.New(client.Config{URL: "http://localhost:6632"})
//	if err != nil {
//		log.Fatal(err)
//	}
//	err = c.Consume(ctx, "orders", func(ctx context.Context, msgs []api.PopMessage) error {
//		for _, m := range msgs {
//			fmt.Printf("%s\n", m.Data)
//		}
//		return nil // acknowledges the batch; an error redelivers it
//	}, client.ConsumeOptions{Group: "billing", Concurrency: 4, BatchSize: 100})
//
// The client follows the rules of Queen's guide to writing a client: it
// sends the token as "Authorization: Bearer" and nothing else; reads a 204
// as "no messages"; checks every per-item verdict of a push or an ack (a
// *PartialError when some failed or the count is wrong); backs off in place
// on 429, honouring Retry-After, else from 500 ms doubling to 30 s with
// jitter, ten attempts (unbounded for a long poll); stops at once on 403;
// gives a long poll an HTTP timeout of the server's timeout plus 5 s; never
// asks for autoAck unless told to; abandons the rest of a batch after a
// negative acknowledgement; pins each lane (queue:partition:group) to one
// of several brokers by consistent hashing; and keeps a generous pool of
// idle connections.
//
// Errors the broker answers are *api.Error values; match them with
// errors.Is against the sentinels of this package (ErrNotFound,
// ErrForbidden …), which compare by code.
package client
