package lane

// The rules of the retention and eviction sweeps (queue options
// retentionSeconds, completedRetentionSeconds and maxWaitTimeSeconds). A
// sweep removes or evicts a prefix of a partition, the messages up to some
// offset, never a message with an older one left behind, so that a cursor
// keeps meaning "everything up to here is done".

// MaxWaitError is the dead-letter reason of a message evicted because it
// waited longer than its queue's maxWaitTimeSeconds.
const MaxWaitError = "max wait time exceeded"

// Drop records that every message up to through has been deleted by
// retention (whatever its state). The cursor moves past them, so the lane's
// head is the first message still stored and the attempts it counted go with
// the deleted one; a lease whose whole batch was deleted is released, since
// its consumer can no longer acknowledge anything of it. A lease that still
// holds later messages is kept. It reports whether the state changed.
func (s *State) Drop(through int64) bool {
	changed := false
	if s.LeaseID != "" && s.BatchEnd <= through {
		s.Release()
		changed = true
	}
	if through > s.Cursor {
		s.Commit(through)
		changed = true
	}
	return changed
}

// Evict moves the lane past messages that waited too long: offsets are the
// messages after the cursor that the sweep found too old, ascending, with no
// other message before or between them. It returns one dead letter per
// message (the head's carries its failed attempts so far) and commits the
// last. A lane under a live lease is left alone: its consumer is working on
// the head, and whatever still waits after the lease is evicted by a later
// sweep. A lease that expired without being released is dropped: its
// messages are the ones evicted.
func (s *State) Evict(offsets []int64, nowMs int64) []DeadLetter {
	if len(offsets) == 0 || s.Leased(nowMs) {
		return nil
	}
	if s.LeaseID != "" {
		s.Release()
	}
	dead := make([]DeadLetter, 0, len(offsets))
	for _, off := range offsets {
		if off <= s.Cursor {
			continue // already consumed: nothing to evict
		}
		attempts := 0
		if len(dead) == 0 {
			attempts = s.HeadAttempts // the head's failures so far
		}
		dead = append(dead, DeadLetter{Offset: off, Error: MaxWaitError, Attempts: attempts})
	}
	s.Commit(offsets[len(offsets)-1])
	return dead
}
