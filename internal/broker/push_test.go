package broker

import (
	"slices"
	"testing"

	"github.com/queen-go/queen/internal/store"
)

// TestPrepareItemsMarksMintedTransactionIDs: only an item that came without
// a transactionId is marked as minted, since the store then skips looking
// for a duplicate of it; a client's key, even one that looks like ours, is
// always looked up.
func TestPrepareItemsMarksMintedTransactionIDs(t *testing.T) {
	items := []store.PushItem{{Queue: "q"}, {Queue: "q", TransactionID: "order-1"},
		{Queue: "q", TransactionID: newID()}}
	prepareItems(items, Caller{})
	if items[0].TransactionID == "" || !items[0].MintedTxn {
		t.Errorf("item without a transactionId: %q minted=%v, want a fresh id marked minted",
			items[0].TransactionID, items[0].MintedTxn)
	}
	for _, it := range items[1:] {
		if it.MintedTxn {
			t.Errorf("client's transactionId %q marked minted", it.TransactionID)
		}
	}
}

// TestDedupe: the first item of a (queue, partition, transactionId) wins and
// later ones point at it; a batch without repeats is passed on as it is.
func TestDedupe(t *testing.T) {
	it := func(q, p, txn string) store.PushItem {
		return store.PushItem{Queue: q, Partition: p, TransactionID: txn, MessageID: q + p + txn}
	}
	tests := []struct {
		name       string
		items      []store.PushItem
		wantUnique []string // MessageIDs
		wantWinner []int
	}{
		{"none", nil, nil, []int{}},
		{"no repeats", []store.PushItem{it("q", "a", "1"), it("q", "b", "1"), it("r", "a", "1")},
			[]string{"qa1", "qb1", "ra1"}, []int{0, 1, 2}},
		{"repeats", []store.PushItem{it("q", "a", "1"), it("q", "a", "2"), it("q", "a", "1"), it("q", "b", "3"),
			it("q", "a", "2")}, []string{"qa1", "qa2", "qb3"}, []int{0, 1, 0, 2, 1}},
		{"all the same", []store.PushItem{it("q", "", "x"), it("q", "", "x"), it("q", "", "x")},
			[]string{"qx"}, []int{0, 0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			unique, winner := dedupe(tc.items)
			var ids []string
			for _, u := range unique {
				ids = append(ids, u.MessageID)
			}
			if !slices.Equal(ids, tc.wantUnique) || !slices.Equal(winner, tc.wantWinner) {
				t.Errorf("dedupe = %v, %v; want %v, %v", ids, winner, tc.wantUnique, tc.wantWinner)
			}
			if len(unique) == len(tc.items) && len(unique) > 0 && &unique[0] != &tc.items[0] {
				t.Error("a batch without repeats was copied")
			}
		})
	}
}
