package spool

// PendingQueues returns the records waiting for replay per queue (the
// keys' Partition is empty), for the per-queue metrics. Records too damaged
// to decode are counted in Pending only.
func (s *Spool) PendingQueues() map[PartitionKey]int64 {
	s.countMu.Lock()
	defer s.countMu.Unlock()
	out := make(map[PartitionKey]int64)
	for k, n := range s.counts {
		out[PartitionKey{Tenant: k.Tenant, Queue: k.Queue}] += n
	}
	return out
}
