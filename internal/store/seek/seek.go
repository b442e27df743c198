// Package seek finds where a seek to a point in time puts a lane's cursor:
// on the last message created at or before that time, so that the next
// message read is the first one created after it.
//
// Messages are in offset order within a partition and their createdAt
// follows that order, so the boundary is found by binary search over
// offsets, one index lookup per step: a seek costs O(log n) lookups per
// partition however many messages it holds, never a scan. The searches of
// many partitions advance in lockstep, so that a driver answers one step of
// all of them with one query.
package seek

// Range is the search of one partition: its messages after Lo (its cleared
// offset, below which nothing is readable) up to Hi (its last offset).
type Range struct {
	Hi        int64
	Lo        int64
	Partition int64
}

// Found is the first message at or after an offset: its offset and
// createdAt (Unix ms); OK is false when there is none in the asked range.
type Found struct {
	CreatedAt int64
	Offset    int64
	OK        bool
}

// Prober answers one step for many partitions: for each i, the first
// message of partition parts[i] with an offset in [from[i], to[i]].
type Prober func(parts, from, to []int64) ([]Found, error)

// Cursors returns, for each range, the offset of the last message created
// at or before ts (Unix ms), or the range's Lo when there is none.
//
// With createdAt not quite in offset order (on PostgreSQL, two concurrent
// pushes to one partition may commit in the other order than their clocks)
// the answer is a boundary among the messages created within those few
// milliseconds of ts.
func Cursors(ranges []Range, ts int64, probe Prober) ([]int64, error) {
	lo := make([]int64, len(ranges))
	hi := make([]int64, len(ranges))
	for i, r := range ranges {
		lo[i], hi[i] = r.Lo, max(r.Hi, r.Lo)
	}
	var active, parts, from, to []int64
	for step := 0; ; step++ {
		active, parts, from, to = active[:0], parts[:0], from[:0], to[:0]
		for i := range ranges {
			if lo[i] < hi[i] {
				// The first step looks at the oldest message: a seek to
				// the beginning (a time before it) ends there.
				mid := lo[i] + 1
				if step > 0 {
					mid = lo[i] + (hi[i]-lo[i]+1)/2
				}
				active = append(active, int64(i))
				parts = append(parts, ranges[i].Partition)
				from = append(from, mid)
				to = append(to, hi[i])
			}
		}
		if len(active) == 0 {
			return lo, nil
		}
		found, err := probe(parts, from, to)
		if err != nil {
			return nil, err
		}
		for k, i := range active {
			f := found[k]
			switch {
			case f.OK && f.CreatedAt <= ts && f.Offset >= from[k] && f.Offset <= hi[i]:
				lo[i] = f.Offset // the target is at or after this message
			default:
				hi[i] = from[k] - 1 // nothing in [mid, hi] is at or before ts
			}
		}
	}
}
