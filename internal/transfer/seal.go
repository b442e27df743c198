package transfer

import "github.com/queen-go/queen/internal/store"

// Seal is how an imported message's payload is to be recorded: Queen's
// unbound seal when Queen stored it encrypted, which the broker then opens
// on the queue the row is imported into (and nowhere else), else the
// payload as given.
func (m *QueenMessage) Seal() store.Seal {
	if m.Encrypted {
		return store.SealQueen
	}
	return store.SealNone
}
