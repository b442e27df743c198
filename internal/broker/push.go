package broker

import (
	"context"
	"errors"
	"strings"

	"github.com/queen-go/queen/internal/store"
)

// PushVerdict is the outcome of one pushed item, in request order.
type PushVerdict struct {
	Error         string
	MessageID     string
	Queue         string
	Status        store.PushStatus
	TransactionID string
}

// Push stores items as one batch sharing one createdAt. The first
// occurrence of a (queue, partition, transactionId) in the batch wins; later
// ones are answered as duplicates carrying the winner's id.
func (b *Broker) Push(ctx context.Context, c Caller, items []store.PushItem) ([]PushVerdict, error) {
	if len(items) == 0 {
		return []PushVerdict{}, nil
	}
	prepareItems(items, c)
	unique, winner := dedupe(items)
	var res []store.PushResult
	if b.spooling() || b.behindSpool(ctx, unique) {
		res = b.spoolPush(unique)
	} else {
		var err error
		res, err = b.storePush(ctx, unique) // seals payloads first (encrypt.go)
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return nil, err // the client left; it will not read a verdict
		case b.spool != nil && errors.Is(err, store.ErrUnavailable):
			// An outage: the items are accepted, and the spool holds them
			// until the store takes them (idempotently, by transactionId).
			// Any other error is the request's, and is answered: spooling it
			// would only fail again at replay.
			b.markDown(err)
			res = b.spoolPush(unique)
		default:
			return nil, err
		}
	}
	out := make([]PushVerdict, len(items))
	dupes := 0
	tally := b.metrics.Tally(c.tenant())
	var touched []store.Wake
	var keys queueKeys
	for i := range items {
		r := res[winner[i]]
		v := PushVerdict{Queue: items[i].Queue, TransactionID: items[i].TransactionID,
			MessageID: r.MessageID, Status: r.Status, Error: r.Error}
		if unique[winner[i]].MessageID != items[i].MessageID {
			v.Status = store.PushDuplicate // a repeat within this batch
		}
		switch v.Status {
		case store.PushQueued:
			tally.Add(v.Queue, 1)
			touched = addWake(touched, keys.of(c.tenant(), v.Queue))
		case store.PushDuplicate:
			dupes++
		}
		out[i] = v
	}
	tally.Pushed()
	b.metrics.PushDuplicates.Add(float64(dupes))
	if len(touched) > 0 {
		b.hub.kick(touched...)
	}
	return out, nil
}

// prepareItems applies defaults and mints ids in place.
func prepareItems(items []store.PushItem, c Caller) { prepare(items, c.tenant(), c.Subject, false) }

// PrepareEmitted prepares in place the items a stream cycle emits exactly
// as a push prepares its items, but keeps a messageId an item carries
// (Queen's SDK orders a window's emissions by them).
func PrepareEmitted(items []store.PushItem, tenant, subject string) {
	prepare(items, tenant, subject, true)
}

// prepare sets the defaults of items to be pushed and mints their ids: the
// tenant, the caller as producer, the Default partition, a UUIDv7
// transactionId (marked minted, so that the store skips its duplicate
// probe: a new id cannot repeat a stored one), a UUIDv7 messageId (unless
// keepIDs and the item has one), and a new queue's namespace and task from
// its name.
func prepare(items []store.PushItem, tenant, subject string, keepIDs bool) {
	for i := range items {
		it := &items[i]
		it.Tenant, it.ProducerSub = tenant, subject
		it.Sealed = store.SealNone // a client's payload, whatever its shape (encrypt.go)
		if it.Partition == "" {
			it.Partition = store.DefaultPartition
		}
		if it.TransactionID == "" {
			it.TransactionID, it.MintedTxn = newID(), true
		}
		if !keepIDs || it.MessageID == "" {
			it.MessageID = newID()
		}
		if it.Namespace == "" && it.Task == "" {
			it.Namespace, it.Task = DeriveNamespaceTask(it.Queue)
		}
	}
}

// queueKeys builds store.QueueKey once per run of items of one queue (a
// batch's items usually share it) instead of once per item.
type queueKeys struct{ tenant, queue, key string }

func (k *queueKeys) of(tenant, queue string) string {
	if k.key == "" || tenant != k.tenant || queue != k.queue {
		k.tenant, k.queue, k.key = tenant, queue, store.QueueKey(tenant, queue)
	}
	return k.key
}

type dedupKey struct{ queue, partition, txn string }

// dedupe returns the items that are first of their (queue, partition,
// transactionId), and for every input item the index of its winner there.
// Without repeats (the usual case) unique is items itself, not a copy.
func dedupe(items []store.PushItem) (unique []store.PushItem, winner []int) {
	winner = make([]int, len(items))
	seen := make(map[dedupKey]int, len(items))
	repeats := false
	for i := range items {
		k := dedupKey{items[i].Queue, items[i].Partition, items[i].TransactionID}
		if w, ok := seen[k]; ok {
			winner[i] = w
			repeats = true
			continue
		}
		seen[k] = i
		winner[i] = i
	}
	if !repeats {
		return items, winner // the usual case: no copy
	}
	// Compact the winners; an item's winner comes before it, so its place
	// in unique is known by then.
	at := make([]int, len(items))
	unique = make([]store.PushItem, 0, len(seen))
	for i := range items {
		if winner[i] == i {
			at[i] = len(unique)
			unique = append(unique, items[i])
		}
		winner[i] = at[winner[i]]
	}
	return unique, winner
}

// DeriveNamespaceTask splits a queue name as Queen does for queues created
// by a push: namespace is the text before the first '.', task the text
// between the first and second '.'.
func DeriveNamespaceTask(queue string) (namespace, task string) {
	namespace, rest, found := strings.Cut(queue, ".")
	if !found {
		return queue, ""
	}
	task, _, _ = strings.Cut(rest, ".")
	return namespace, task
}

// addWake counts one more message (or released lane) for the long polls of
// the queue key.
func addWake(list []store.Wake, key string) []store.Wake { return addWakes(list, key, 1) }

// addWakes counts n more messages for the long polls of the queue key.
func addWakes(list []store.Wake, key string, n int) []store.Wake {
	for i := range list {
		if list[i].Key == key {
			list[i].Count += n
			return list
		}
	}
	return append(list, store.Wake{Key: key, Count: n})
}
