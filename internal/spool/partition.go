package spool

import (
	"context"

	"github.com/queen-go/queen/internal/store"
)

// PartitionKey names one partition of one tenant's queue.
type PartitionKey struct {
	Tenant    string // "" means store.DefaultTenant
	Queue     string
	Partition string
}

func (k PartitionKey) normal() PartitionKey {
	k.Tenant = store.TenantOrDefault(k.Tenant)
	return k
}

func keyOf(it *store.PushItem) PartitionKey {
	return PartitionKey{Tenant: it.Tenant, Queue: it.Queue, Partition: it.Partition}.normal()
}

// PendingIn reports whether any of the partitions has spooled records not
// yet replayed: a push to such a partition must be spooled too (or wait,
// see WaitClear), or it would overtake them.
func (s *Spool) PendingIn(keys []PartitionKey) bool {
	s.countMu.Lock()
	defer s.countMu.Unlock()
	return s.pendingInLocked(keys)
}

// WaitClear returns nil once none of the partitions has spooled records
// left, or ctx.Err() if ctx ends first.
func (s *Spool) WaitClear(ctx context.Context, keys []PartitionKey) error {
	for {
		s.countMu.Lock()
		if !s.pendingInLocked(keys) {
			s.countMu.Unlock()
			return nil
		}
		drop := s.dropped
		s.countMu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-drop:
		}
	}
}

// pendingInLocked expects s.countMu held.
func (s *Spool) pendingInLocked(keys []PartitionKey) bool {
	for _, k := range keys {
		if s.counts[k.normal()] > 0 {
			return true
		}
	}
	return false
}

// hold counts newly spooled records, one per key. Append calls it under
// s.mu, before the records can be sealed and replayed, so that a count
// never goes below zero.
func (s *Spool) hold(keys []PartitionKey) {
	if len(keys) == 0 {
		return
	}
	s.countMu.Lock()
	for _, k := range keys {
		s.counts[k]++
	}
	s.pending.Add(int64(len(keys)))
	s.countMu.Unlock()
}

// release uncounts n records that replay stored or dead-lettered: keys are
// theirs, except that a record too damaged to decode has none (it was
// counted in Pending only). Waiters are woken, since some partition may be
// clear now.
func (s *Spool) release(keys []PartitionKey, n int) {
	if n == 0 {
		return
	}
	s.countMu.Lock()
	for _, k := range keys {
		// Deleting at zero keeps the map as small as the set of
		// partitions with spooled records.
		if c := s.counts[k] - 1; c > 0 {
			s.counts[k] = c
		} else {
			delete(s.counts, k)
		}
	}
	s.pending.Add(-int64(n))
	close(s.dropped)
	s.dropped = make(chan struct{})
	s.countMu.Unlock()
}
