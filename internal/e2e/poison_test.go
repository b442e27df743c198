package e2e

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	qbroker "github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/server"
	"github.com/queen-go/queen/internal/spool"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/postgres"
)

// spoolItem is an item as the broker would have spooled it: defaults
// applied and ids minted.
func spoolItem(queue, partition, txn string, payload any) store.PushItem {
	data, err := json.Marshal(payload)
	if err != nil {
		panic(err)
	}
	ns, task := qbroker.DeriveNamespaceTask(queue)
	return store.PushItem{
		Tenant: store.DefaultTenant, Queue: queue, Partition: partition, TransactionID: txn,
		MessageID: uuid.Must(uuid.NewV7()).String(), Payload: data, Namespace: ns, Task: task,
	}
}

// deadLetterLine is one line of the spool's dead-letter file, as documented
// in package spool.
type deadLetterLine struct {
	Time    time.Time `json:"time"`
	Reason  string    `json:"reason"`
	Segment string    `json:"segment"`
	Item    *struct {
		Queue         string `json:"queue"`
		Partition     string `json:"partition"`
		MessageID     string `json:"messageId"`
		TransactionID string `json:"transactionId"`
	} `json:"item"`
}

// promValue reads an unlabelled gauge or counter from /metrics/prometheus.
func (c *client) promValue(ctx context.Context, base, name string) (float64, error) {
	status, body, err := c.do(ctx, "GET", base+"/metrics/prometheus", nil)
	if err != nil {
		return 0, err
	}
	if status != http.StatusOK {
		return 0, fmt.Errorf("metrics: status %d", status)
	}
	for line := range strings.SplitSeq(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, fmt.Errorf("metrics: no %s", name)
}

// A spool holding one item PostgreSQL refuses for good, between good ones,
// is replayed by a broker started on it: the good items are delivered in
// their order, the bad one is set aside in the dead-letter file with the
// database's reason and counted by queen_spool_dead_letters, the broker is
// healthy, and fresh pushes to the poisoned partition are stored directly.
func TestPoisonedSpoolIsSetAside(t *testing.T) {
	u := testURL(t)
	const queue = "e2e-poison"
	long := make([]byte, 1500)
	rand.Read(long)
	cases := []struct {
		name string
		bad  store.PushItem
		// sqlstate is what the database answers the bad item with.
		sqlstate string
	}{
		{
			// PostgreSQL text cannot hold NUL: invalid byte sequence.
			name:     "NUL in the queue name",
			bad:      spoolItem("a\x00b", "p0", "bad-nul", map[string]any{"bad": "nul"}),
			sqlstate: "22021",
		},
		{
			// 3,000 random bytes do not compress, so the index entry
			// exceeds the btree row limit (2,704 bytes): program limit
			// exceeded. It shares a partition with good items.
			name:     "3000-byte transactionId",
			bad:      spoolItem(queue, "p0", hex.EncodeToString(long), map[string]any{"bad": "long"}),
			sqlstate: "54000",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			schema := newSchema(t)
			dir := t.TempDir()
			good := func(partition, txn string) store.PushItem {
				return spoolItem(queue, partition, txn, map[string]any{"txn": txn})
			}
			// Appended one push at a time, as the broker would have.
			pushes := [][]store.PushItem{
				{good("p0", "g1")},
				{tc.bad},
				{good("p0", "g2"), good("p1", "h1")},
				{good("p0", "g3")},
				{good("p1", "h2"), good("p0", "g4")},
			}
			want := map[string][]store.PushItem{} // by partition, in order
			sp, err := spool.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, items := range pushes {
				if err := sp.Append(items); err != nil {
					t.Fatalf("spool append: %v", err)
				}
				for _, it := range items {
					if it.TransactionID != tc.bad.TransactionID {
						want[it.Partition] = append(want[it.Partition], it)
					}
				}
			}
			if err := sp.Close(); err != nil {
				t.Fatal(err)
			}

			br := startBroker(t, "poison", postgres.Config{URL: u, Schema: schema, PoolSize: 4},
				server.Config{SpoolDir: dir})
			c := newClient(t)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()

			var m map[string]any
			if _, _, err := c.getJSON(ctx, br.url+"/api/v1/system/maintenance", &m); err != nil || m["maintenanceMode"] != false {
				t.Fatalf("maintenance status %v (%v), want maintenanceMode false", m, err)
			}
			// The broker replays by itself.
			var pending, dead float64
			var mErr error
			if !waitUntil(20*time.Second, 20*time.Millisecond, func() bool {
				pending, mErr = c.promValue(ctx, br.url, "queen_spool_pending")
				if mErr != nil {
					return false
				}
				dead, mErr = c.promValue(ctx, br.url, "queen_spool_dead_letters")
				return mErr == nil && pending == 0 && dead >= 1
			}) {
				t.Fatalf("after 20s: queen_spool_pending %v, queen_spool_dead_letters %v (%v); want 0 and 1", pending, dead, mErr)
			}
			if dead != 1 {
				t.Errorf("queen_spool_dead_letters %v, want 1", dead)
			}

			// The good items, in order, under the ids minted at spool time.
			for _, partition := range []string{"p0", "p1"} {
				p, err := c.pop(ctx, br.url, queuePath(queue)+"/partition/"+partition+"?batch=100")
				if err != nil {
					t.Fatalf("pop %s: %v", partition, err)
				}
				var got, wantTxns []string
				if p != nil {
					for _, m := range p.Messages {
						got = append(got, m.TransactionID)
					}
				}
				for i, it := range want[partition] {
					wantTxns = append(wantTxns, it.TransactionID)
					if p != nil && i < len(p.Messages) && p.Messages[i].ID != it.MessageID {
						t.Errorf("partition %s: %s delivered as message %s, spooled as %s", partition, it.TransactionID, p.Messages[i].ID, it.MessageID)
					}
				}
				if strings.Join(got, ",") != strings.Join(wantTxns, ",") {
					t.Errorf("partition %s delivered %v, want %v", partition, got, wantTxns)
				}
				if p != nil {
					if err := c.ackAll(ctx, br.url, p); err != nil {
						t.Fatal(err)
					}
				}
			}

			// The bad item is in the dead-letter file, with the reason.
			f, err := os.Open(dir + "/dead-letter.jsonl")
			if err != nil {
				t.Fatalf("dead-letter file: %v", err)
			}
			defer f.Close()
			var lines []deadLetterLine
			sc := bufio.NewScanner(f)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				var l deadLetterLine
				if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
					t.Fatalf("dead-letter line %q: %v", sc.Text(), err)
				}
				lines = append(lines, l)
			}
			if err := sc.Err(); err != nil {
				t.Fatal(err)
			}
			if len(lines) != 1 {
				t.Fatalf("dead-letter file holds %d lines, want 1: %+v", len(lines), lines)
			}
			l := lines[0]
			switch {
			case l.Item == nil:
				t.Errorf("dead letter without item: %+v", l)
			case l.Item.TransactionID != tc.bad.TransactionID || l.Item.Queue != tc.bad.Queue ||
				l.Item.MessageID != tc.bad.MessageID || l.Item.Partition != tc.bad.Partition:
				t.Errorf("dead letter holds %+v, want the bad item %s/%q/%s", *l.Item, tc.bad.Partition, tc.bad.Queue, tc.bad.MessageID)
			}
			if !strings.Contains(l.Reason, tc.sqlstate) {
				t.Errorf("dead letter reason %q does not name SQLSTATE %s", l.Reason, tc.sqlstate)
			}
			if l.Segment == "" || l.Time.IsZero() {
				t.Errorf("dead letter without segment or time: %+v", l)
			}
			t.Logf("dead letter: reason %q", l.Reason)

			var health map[string]any
			if st, body, err := c.getJSON(ctx, br.url+"/health", &health); err != nil || st != http.StatusOK {
				t.Errorf("/health %d %s (%v), want 200", st, body, err)
			}

			// A fresh push to the poisoned partition is stored and delivered.
			res, err := c.push(ctx, br.url, []pushItem{{Queue: queue, Partition: "p0", TransactionID: "fresh", Payload: map[string]any{"fresh": true}}})
			if err != nil {
				t.Fatal(err)
			}
			if res[0].Status != "queued" {
				t.Fatalf("fresh push answered %+v, want queued", res[0])
			}
			p, err := c.pop(ctx, br.url, queuePath(queue)+"?batch=100")
			if err != nil {
				t.Fatal(err)
			}
			if p == nil || len(p.Messages) != 1 || p.Messages[0].TransactionID != "fresh" || p.Messages[0].ID != res[0].MessageID {
				t.Fatalf("after the fresh push a pop delivered %+v, want only message %s (fresh)", p, res[0].MessageID)
			}
			if err := c.ackAll(ctx, br.url, p); err != nil {
				t.Fatal(err)
			}
		})
	}
}
