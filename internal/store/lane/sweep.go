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

// Eviction is what an eviction step does to one partition (EvictPartition).
type Eviction struct {
	// Dead holds, per lane in the order given, the dead letters to write
	// (the lane's state has moved past them); nil for a lane left alone.
	Dead [][]DeadLetter
	// Floor is the partition's new floor: nothing at or below it waits in
	// any unleased lane.
	Floor int64
	// Evicted counts the messages evicted, each once whatever the number of
	// groups that dead-lettered it.
	Evicted int
	// Used is how much of the budget the dead letters took.
	Used int
	// More says the budget ran out before the last offset.
	More bool
	// Skip says every lane is leased: nothing moves, a later sweep evicts.
	Skip bool
}

// EvictPartition evicts offsets (the partition's messages above the slowest
// lane that waited too long, ascending) from every unleased lane, writing at
// most budget dead letters in all, and moves the partition's floor past what
// every unleased lane has passed. A message counts as evicted once, when the
// floor passes it: then every unleased lane has passed it, and the slowest
// of them was behind it, so that lane evicted it. floor is the partition's
// floor before the step; more says offsets did not reach the end of the
// partition's old messages.
func EvictPartition(lanes []*State, floor int64, offsets []int64, budget int, more bool, nowMs int64) Eviction {
	ev := Eviction{Dead: make([][]DeadLetter, len(lanes)), More: more}
	if len(offsets) == 0 {
		ev.Skip = true
		return ev
	}
	last := offsets[len(offsets)-1]
	ev.Floor = last // lowered to the lowest cursor an unleased lane is left at
	behind := int64(-1)
	for i, l := range lanes {
		if l.Leased(nowMs) {
			continue // its consumer is on it; a later sweep evicts the rest
		}
		if behind < 0 || l.Cursor < behind {
			behind = l.Cursor
		}
		var mine []int64
		for _, off := range offsets {
			if off > l.Cursor && len(mine) < budget-ev.Used {
				mine = append(mine, off)
			}
		}
		ev.Dead[i] = l.Evict(mine, nowMs)
		ev.Used += len(ev.Dead[i])
		if l.Cursor < last {
			ev.Floor, ev.More = min(ev.Floor, l.Cursor), true // the budget ran out
		}
	}
	if behind < 0 {
		ev.Skip = true
		return ev
	}
	for _, off := range offsets {
		if off > max(floor, behind) && off <= ev.Floor {
			ev.Evicted++
		}
	}
	return ev
}

// PopEvictMax bounds how many expired messages one pop evicts from one lane
// before it gives up on the lane for this pop: a later pop, or the sweep,
// takes the rest, so that a long expired backlog cannot make one pop slow.
const PopEvictMax = 1000

// Expiry is the pop's side of eviction (maxWaitTimeSeconds): a pop never
// delivers a message that waited too long, whenever the sweep last ran. It
// evicts the lane's expired head as a sweep would have just before (Evict:
// one dead letter per message, the cursor past them) and delivers what
// follows. Only a prefix is expired, as for the sweep: the first message
// still in time ends it, so that a cursor never passes a message it should
// deliver.
type Expiry struct {
	// Cutoff is the created time (Unix ms) messages older than which have
	// waited too long; 0 turns the rule off.
	Cutoff int64
	// Offsets are the expired messages seen so far, ascending.
	Offsets []int64
	ended   bool
}

// NewExpiry returns the rule for a queue whose maxWaitTimeSeconds is
// seconds (0: off), at nowMs.
func NewExpiry(seconds int, nowMs int64) Expiry {
	if seconds <= 0 {
		return Expiry{ended: true}
	}
	return Expiry{Cutoff: nowMs - int64(seconds)*1000}
}

// Expired takes the next message after the cursor, in offset order, and
// reports whether it is part of the expired head (and so not to deliver).
func (e *Expiry) Expired(seq, createdAt int64) bool {
	if e.ended || createdAt >= e.Cutoff {
		e.ended = true
		return false
	}
	e.Offsets = append(e.Offsets, seq)
	return true
}

// Ended reports whether a message still in time was seen (or the rule is
// off): no message read after this one is expired.
func (e *Expiry) Ended() bool { return e.ended }
