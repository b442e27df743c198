package timers

import (
	"github.com/queen-go/queen/internal/service"
	"github.com/queen-go/queen/internal/store"
)

// Store is what the timers need of the storage engine: the methods of
// store.TimerStore, and the job lock under which one broker at a time fires
// due timers and prunes finished ones. store.Store implements it; a test
// fake implements only this.
type Store interface {
	store.TimerStore
	service.JobLocker
}
