package broker

import (
	"github.com/queen-go/queen/internal/store"
)

// SharedState is what this broker shares with the others on its store and
// how: the engine's wake-up transport, the queue-option cache every broker
// keeps of its own, and the maintenance modes all of them follow.
type SharedState struct {
	Transport      store.TransportStats
	CacheSize      int   // queues whose options the broker holds
	CacheHits      int64 // lookups the cache answered
	CacheMisses    int64 // lookups that went to the store
	Maintenance    bool
	PopMaintenance bool
}

// SharedState reports the broker's shared state as it is now.
func (b *Broker) SharedState() SharedState {
	return SharedState{
		Transport:      b.store.TransportStats(),
		CacheSize:      b.sealing.m.Len(),
		CacheHits:      b.sealing.hits.Load(),
		CacheMisses:    b.sealing.misses.Load(),
		Maintenance:    b.maintenance.Load(),
		PopMaintenance: b.popMaintenance.Load(),
	}
}
