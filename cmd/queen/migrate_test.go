package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/postgres/pgtest"
	"github.com/queen-go/queen/internal/store/sqlite"
	"github.com/queen-go/queen/internal/store/storetest"
	"github.com/queen-go/queen/internal/testbroker"
	"github.com/queen-go/queen/internal/transfer"
)

// popTxns pops one batch for group from the queue at base and returns the
// transactionIds (none on 204).
func popTxns(t *testing.T, base, queue, group string) []string {
	t.Helper()
	res, err := http.Get(fmt.Sprintf("%s/api/v1/pop/queue/%s?batch=7&partitions=2&autoAck=true&consumerGroup=%s", base, queue, group))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode == http.StatusNoContent {
		return nil
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("pop: %d %s", res.StatusCode, body)
	}
	var r struct {
		Messages []struct{ TransactionID string }
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(r.Messages))
	for i, m := range r.Messages {
		out[i] = m.TransactionID
	}
	return out
}

// TestMigrateEmbeddedToPostgres moves a broker's embedded data to
// PostgreSQL with `queen migrate` while a group is part-way through its
// backlog (one batch leased and not acknowledged): on the target two
// brokers sharing the schema deliver, between them, exactly the messages the
// group had still to commit, each once, the leased ones included. A second
// run into the same target is refused with exit 1 and writes nothing; the
// copy back into a new folder matches too.
func TestMigrateEmbeddedToPostgres(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data")
	st, err := sqlite.Open(ctx, sqlite.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	var items []store.PushItem
	for i := range 200 {
		items = append(items, storetest.Item("moving", fmt.Sprintf("p%d", i%5), i))
	}
	storetest.PushItems(t, st, now, items...)
	storetest.KVApply(t, st, now, storetest.KVSet("state", "cursor", `{"at":42}`))
	// The group commits 60 messages, then holds a lease on 10 more.
	done := map[string]bool{}
	for range 6 {
		p := storetest.PopParams("moving", "g", now)
		p.Batch, p.Partitions, p.AutoAck = 10, 1, true
		for _, m := range storetest.Pop(t, st, p) {
			done[m.TransactionID] = true
		}
	}
	p := storetest.PopParams("moving", "g", now)
	p.Batch = 10
	if leased := storetest.Pop(t, st, p); len(leased) != 10 {
		t.Fatalf("leased %d, want 10", len(leased))
	}
	if len(done) != 60 {
		t.Fatalf("committed %d, want 60", len(done))
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	url, schema := pgtest.URL(t), pgtest.Schema(t, "migrate_")
	var out, errOut bytes.Buffer
	if err := run(ctx, []string{"migrate", "--from", dir, "--to", url, "--to-schema", schema}, func(string) string { return "" },
		&out, &errOut); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out.String())
	}
	for _, line := range []string{"queues 1 1\n", "partitions 5 5\n", "messages 200 200\n", "consumer_groups 1 1\n", "dead_letters 0 0\n", "kv 1 1\n"} {
		if !strings.Contains(out.String(), line) {
			t.Fatalf("migrate printed %q, want a line %q", out.String(), line)
		}
	}

	// Refused: the target holds a queue now.
	out.Reset()
	err = run(ctx, []string{"migrate", "--from", dir, "--to", url, "--to-schema", schema}, func(string) string { return "" }, &out, &errOut)
	if !errors.Is(err, transfer.ErrTargetNotEmpty) || exitCode(err) != exitError {
		t.Fatalf("second migrate: %v (exit %d), want a refusal with exit 1", err, exitCode(err))
	}

	// Back from PostgreSQL into a new folder, while no broker runs on it.
	back := filepath.Join(t.TempDir(), "back")
	out.Reset()
	if err := run(ctx, []string{"migrate", "--from", url, "--from-schema", schema, "--to", back}, func(string) string { return "" },
		&out, &errOut); err != nil || !strings.Contains(out.String(), "messages 200 200\n") {
		t.Fatalf("migrate back: %v\n%s", err, out.String())
	}

	a := testbroker.PostgresSchema(t, url, schema)
	b := testbroker.PostgresSchema(t, url, schema)
	seen := map[string]bool{}
	for empty := 0; empty < 2; {
		got := 0
		for _, base := range []string{a, b} {
			for _, txn := range popTxns(t, base, "moving", "g") {
				if seen[txn] || done[txn] {
					t.Fatalf("message %s delivered again", txn)
				}
				seen[txn] = true
				got++
			}
		}
		if got == 0 {
			empty++
		}
	}
	if len(seen) != 140 {
		t.Fatalf("the two brokers delivered %d messages, want the 140 the group had left", len(seen))
	}
	for _, it := range items {
		if !seen[it.TransactionID] && !done[it.TransactionID] {
			t.Fatalf("message %s lost", it.TransactionID)
		}
	}
}

func TestMigrateUsage(t *testing.T) {
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"migrate", "--from", t.TempDir()}, func(string) string { return "" }, &out, &errOut)
	if exitCode(err) != exitUsage {
		t.Fatalf("migrate without --to: %v, exit %d", err, exitCode(err))
	}
	err = run(context.Background(), []string{"migrate", "--from", filepath.Join(t.TempDir(), "none"), "--to", t.TempDir()},
		func(string) string { return "" }, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "no embedded database") {
		t.Fatalf("migrate from a missing folder: %v", err)
	}
	if got := thousands(3500); got != "3,500" {
		t.Fatalf("thousands(3500) = %q", got)
	}
	if got := thousands(1000000); got != "1,000,000" {
		t.Fatalf("thousands(1000000) = %q", got)
	}
}
