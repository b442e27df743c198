package ephemeral

import (
	"github.com/queen-go/queen/internal/service"
	"github.com/queen-go/queen/internal/store"
)

// Store is what the ephemeral queues need of the storage engine: the
// methods of store.EphemeralStore, and the job lock under which one broker
// at a time sweeps expired queues. store.Store implements it; a test fake
// implements only this.
type Store interface {
	store.EphemeralStore
	service.JobLocker
}
