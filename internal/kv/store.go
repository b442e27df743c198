package kv

import (
	"github.com/queen-go/queen/internal/service"
	"github.com/queen-go/queen/internal/store"
)

// Store is what key/value state needs of the storage engine: the methods
// of store.KVStore, and the job lock under which one broker at a time
// sweeps expired keys. store.Store implements it; a test fake implements
// only this.
type Store interface {
	store.KVStore
	service.JobLocker
}
