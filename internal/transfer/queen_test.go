package transfer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"testing"

	"github.com/queen-go/queen/internal/crypt"
)

// The reader finds in the fixture exactly what Queen delivers from it: for
// every queue, partition and consumer group, the messages after the group's
// position (or its subscription's start) in Queen's order are the
// transactionIds expected.json lists as remaining; every message comes with
// its fields; sealed payloads open with the fixture's key; the DLQ entries
// carry their error and retry count.
func TestQueenReaderFindsWhatQueenDelivers(t *testing.T) {
	conn, schema := restoreQueenFixture(t)
	ctx := context.Background()
	want := readExpected(t)

	if ok, err := IsQueen(ctx, conn, schema); err != nil || !ok {
		t.Fatalf("IsQueen = %v, %v; want true", ok, err)
	}
	if ok, err := IsQueen(ctx, conn, "public"); err != nil || ok {
		t.Fatalf("IsQueen(public) = %v, %v; want false", ok, err)
	}
	r := &QueenReader{DB: conn, Schema: schema, Batch: 7} // small batches: many pages
	counts, err := r.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := (Counts{want.Counts.Queues, want.Counts.Partitions, want.Counts.Messages, want.Counts.DeadLetters,
		want.Counts.PartitionConsumers}); counts != got {
		t.Fatalf("counts %+v, want %+v", counts, got)
	}
	subs, err := r.Subscriptions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := crypt.New(want.Encryption.Key)
	if err != nil {
		t.Fatal(err)
	}

	wantQueues := map[string]int{}
	for i, q := range want.Queues {
		wantQueues[q.Name] = i
	}
	var queues, parts, msgs, leased int
	err = r.Queues(ctx, func(q QueenQueue) error {
		queues++
		wq := want.Queues[wantQueues[q.Name]]
		if q.Namespace != wq.Namespace || q.Task != wq.Task {
			return fmt.Errorf("queue %s: namespace/task %q/%q, want %q/%q", q.Name, q.Namespace, q.Task, wq.Namespace, wq.Task)
		}
		o := q.Options
		for k, v := range map[string]int{"leaseTime": o.LeaseTime, "retryLimit": o.RetryLimit, "retryDelay": o.RetryDelay,
			"ttl": o.TTL, "priority": o.Priority, "maxSize": o.MaxSize} {
			if w, ok := wq.Options[k].(float64); ok && int(w) != v {
				return fmt.Errorf("queue %s: %s %d, want %v", q.Name, k, v, w)
			}
		}
		if wq.Options["encryptionEnabled"] != o.EncryptionEnabled || wq.Options["deadLetterQueue"] != o.DeadLetterQueue {
			return fmt.Errorf("queue %s: options %+v, want %v", q.Name, o, wq.Options)
		}
		positions := map[[2]string]QueenPosition{}
		if err := r.Positions(ctx, q.ID, func(p QueenPosition) error {
			positions[[2]string{p.PartitionID, p.Group}] = p
			if p.Leased {
				leased++
			}
			return nil
		}); err != nil {
			return err
		}
		wantParts := map[string]int{}
		for i, p := range wq.Partitions {
			wantParts[p.Name] = i
		}
		return r.Partitions(ctx, q.ID, func(p QueenPartition) error {
			parts++
			i, ok := wantParts[p.Name]
			if !ok {
				return fmt.Errorf("queue %s: partition %s not expected", q.Name, p.Name)
			}
			wp := wq.Partitions[i]
			remaining := map[string][]string{}
			var all []QueenMessage
			if err := r.Messages(ctx, p.ID, func(ms []QueenMessage) error {
				all = append(all, ms...) // the fixture is small; a copy would not keep them
				return nil
			}); err != nil {
				return err
			}
			if len(all) != len(wp.Messages) {
				return fmt.Errorf("%s/%s: %d messages, want %d", q.Name, p.Name, len(all), len(wp.Messages))
			}
			for j, m := range all {
				msgs++
				wm := wp.Messages[j]
				if m.TransactionID != wm.TransactionID {
					return fmt.Errorf("%s/%s message %d: transactionId %s, want %s (Queen's order)", q.Name, p.Name, j, m.TransactionID, wm.TransactionID)
				}
				if m.TraceID != deref(wm.TraceID) || m.ProducerSub != deref(wm.ProducerSub) || !m.CreatedAt.Equal(wm.CreatedAt) {
					return fmt.Errorf("%s/%s %s: trace %q sub %q at %v, want %v %v %v", q.Name, p.Name, m.TransactionID,
						m.TraceID, m.ProducerSub, m.CreatedAt, deref(wm.TraceID), deref(wm.ProducerSub), wm.CreatedAt)
				}
				payload := m.Payload
				if m.Encrypted {
					if bytes.Contains(payload, []byte("SEALED-")) {
						return fmt.Errorf("%s: plaintext in a sealed payload", m.TransactionID)
					}
					plain, ok := keys.Open(payload)
					if !ok {
						return fmt.Errorf("%s: sealed payload does not open with the fixture's key", m.TransactionID)
					}
					payload = plain
				}
				if !sameJSON(payload, wm.Data) {
					return fmt.Errorf("%s: payload %s, want %s", m.TransactionID, payload, wm.Data)
				}
			}
			for _, g := range wq.ConsumerGroups {
				pos := positions[[2]string{p.ID, g}]
				pos.Empty = pos.Empty || pos.MessageID == ""
				var sub *QueenSubscription
				if s, ok := subs[[2]string{g, q.Name}]; ok {
					sub = &s
				}
				remaining[g] = []string{}
				for _, m := range all {
					if pos.After(m, sub) {
						remaining[g] = append(remaining[g], m.TransactionID)
					}
				}
				if fmt.Sprint(remaining[g]) != fmt.Sprint(wp.Remaining[g]) {
					return fmt.Errorf("%s/%s group %s: remaining %v, want %v", q.Name, p.Name, g, remaining[g], wp.Remaining[g])
				}
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if int64(queues) != want.Counts.Queues || int64(parts) != want.Counts.Partitions || int64(msgs) != want.Counts.Messages {
		t.Fatalf("read %d queues, %d partitions, %d messages; want %+v", queues, parts, msgs, want.Counts)
	}
	if leased != 2 {
		t.Errorf("%d leases live at the dump, want 2", leased)
	}

	var dead []string
	err = r.Queues(ctx, func(q QueenQueue) error {
		parts := map[string]string{}
		if err := r.Partitions(ctx, q.ID, func(p QueenPartition) error { parts[p.ID] = p.Name; return nil }); err != nil {
			return err
		}
		return r.DeadLetters(ctx, q.ID, func(ds []QueenDeadLetter) error {
			for _, d := range ds {
				dead = append(dead, fmt.Sprintf("%s/%s/%s/%s/%s/%d", q.Name, parts[d.PartitionID], d.Group,
					d.Message.TransactionID, d.ErrorMessage, d.RetryCount))
			}
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	wantDead := map[string]bool{}
	for _, d := range want.DeadLetters {
		wantDead[fmt.Sprintf("%s/%s/%s/%s/%s/%d", d.Queue, d.Partition, d.ConsumerGroup, d.TransactionID, d.ErrorMessage, d.RetryCount)] = true
	}
	if len(dead) != len(wantDead) {
		t.Fatalf("dead letters %v, want %v", dead, wantDead)
	}
	for _, d := range dead {
		if !wantDead[d] {
			t.Errorf("dead letter %s not expected (want %v)", d, wantDead)
		}
	}
}

func sameJSON(a, b []byte) bool {
	var x, y any
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber() // 12345678901234567890 is not a float64
	db.UseNumber()
	if da.Decode(&x) != nil || db.Decode(&y) != nil {
		return false
	}
	ja, _ := json.Marshal(exactNumbers(x))
	jb, _ := json.Marshal(exactNumbers(y))
	return bytes.Equal(ja, jb)
}

// exactNumbers writes every number as its exact rational value: PostgreSQL's
// jsonb writes 1e-07 as 0.0000001, the same number.
func exactNumbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		r, ok := new(big.Rat).SetString(string(v))
		if !ok {
			return string(v)
		}
		return "number:" + r.RatString()
	case map[string]any:
		for k, e := range v {
			v[k] = exactNumbers(e)
		}
	case []any:
		for i, e := range v {
			v[i] = exactNumbers(e)
		}
	}
	return v
}
