package streams

import (
	"github.com/queen-go/queen/internal/service"
	"github.com/queen-go/queen/internal/store"
)

// Store is what the stream queries need of the storage engine: the methods
// of store.StreamStore, and the job lock under which one broker at a time
// purges the state of dropped queries. store.Store implements it; a test
// fake implements only this.
type Store interface {
	store.StreamStore
	service.JobLocker
}
