package lane

import "github.com/queen-go/queen/internal/store"

// Group is one consumer group's lane on a partition.
type Group struct {
	Name  string
	State State
}

// Holds reports whether a live lease of the lane holds the message at off:
// it was delivered in the leased batch and not committed yet.
func (s *State) Holds(off, nowMs int64) bool {
	return s.Leased(nowMs) && s.Cursor < off && off <= s.BatchEnd
}

// Standing is where one message stands across the consumer groups reading
// its partition.
type Standing struct {
	// ConsumedBy counts the named (bus) groups whose cursor passed it.
	ConsumedBy int
	// HasQueueMode says queue mode reads the partition.
	HasQueueMode bool
	// LeaseExpiresAt is the latest deadline of the live leases holding
	// it, in Unix milliseconds; 0 when none does.
	LeaseExpiresAt int64
	Status         store.MessageStatus
	// TotalGroups counts the named (bus) groups reading the partition.
	TotalGroups int
}

// StandingOf decides the status of the message at offset off from the lanes
// of its partition (one per consumer group that reads it, queue mode
// included) and whether some group dead-lettered it:
//
//   - dead_letter when a group dead-lettered it;
//   - completed when every group reading the partition has committed it
//     (and at least one reads it);
//   - processing when a live lease holds it;
//   - pending otherwise.
func StandingOf(off int64, groups []Group, deadLettered bool, nowMs int64) Standing {
	var st Standing
	all := true
	for i := range groups {
		g := &groups[i]
		consumed := g.State.Cursor >= off
		if g.Name == store.QueueMode {
			st.HasQueueMode = true
		} else {
			st.TotalGroups++
			if consumed {
				st.ConsumedBy++
			}
		}
		all = all && consumed
		if g.State.Holds(off, nowMs) && g.State.LeaseExpiresAt > st.LeaseExpiresAt {
			st.LeaseExpiresAt = g.State.LeaseExpiresAt
		}
	}
	switch {
	case deadLettered:
		st.Status = store.StatusDeadLetter
	case all && len(groups) > 0:
		st.Status = store.StatusCompleted
	case st.LeaseExpiresAt > 0:
		st.Status = store.StatusProcessing
	default:
		st.Status = store.StatusPending
	}
	return st
}

// SkipMissing moves the cursor over offsets that hold no message, after a
// message of the partition was deleted: next is the first message after the
// cursor (0 when none is left) and last the partition's last offset. The
// cursor moves to just before next (or to last), which commits nothing that
// exists; the head's attempts were counted for a message that is gone, so
// they start again; and a lease whose whole batch is now behind the cursor
// is released. It reports whether the state changed.
func (s *State) SkipMissing(next, last int64) bool {
	target := last
	if next > 0 {
		target = next - 1
	}
	if target <= s.Cursor {
		return false
	}
	s.Commit(target)
	if s.LeaseID != "" && s.Cursor >= s.BatchEnd {
		s.Release()
	}
	return true
}
