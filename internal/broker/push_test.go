package broker

import (
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
