package broker

import (
	"context"

	"github.com/queen-go/queen/internal/store"
)

// SealItems seals, in place, the payloads of items bound for queues that
// encrypt them (encryptionEnabled), exactly as a push or a transaction does
// (encrypt.go). It is the way in for the stream service, whose cycles push
// through the store themselves. It returns why an item cannot be sealed
// (this broker has no key), or "".
func (b *Broker) SealItems(ctx context.Context, items []store.PushItem) (string, error) {
	return b.sealTx(ctx, []store.TxOp{{Items: items}})
}
