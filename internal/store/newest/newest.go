// Package newest pages through the newest messages of a set of partitions
// (a queue's) without an index on time: it merges the partitions' logs,
// each read backwards along its primary key, and visits only the partitions
// whose newest message can still be on the page. Both drivers use it for
// GET /api/v1/status/queues/{queue}/messages, so that a page costs what it
// holds (offset plus limit rows, and one lookup per partition that
// contributes), never the queue's size.
//
// Why it is exact: a partition's head (an upper bound of its newest
// message's key) is known without reading messages (its last offset, its
// last message's time). Partitions are taken in head order, and a
// partition joins the merge only once its head exceeds the best key already
// in hand; a partition that never joins cannot hold a message newer than
// the ones emitted.
package newest

import (
	"container/heap"
	"fmt"
)

// Key orders messages: a larger key is newer. Fields compare in order.
// Seq must be the message's offset in its partition (reads continue below
// it); Time and Part order messages across partitions.
type Key struct {
	Time int64 // e.g. createdAt, or a global offset
	Part int64 // breaks ties between partitions
	Seq  int64 // the offset within the partition
}

// Less reports whether k is older than o.
func (k Key) Less(o Key) bool {
	if k.Time != o.Time {
		return k.Time < o.Time
	}
	if k.Part != o.Part {
		return k.Part < o.Part
	}
	return k.Seq < o.Seq
}

// Read asks for up to Limit messages of Partition, newest first, with an
// offset below Below (0: from its newest).
type Read[P any] struct {
	Below     int64
	Limit     int
	Partition P
}

// Source is what a driver supplies.
type Source[P, M any] interface {
	// Partitions returns up to limit partitions after the first skip, in
	// descending order of Head.
	Partitions(skip, limit int) ([]P, error)
	// Head returns an upper bound of the key of p's newest message.
	Head(p P) Key
	// Read runs the reads (in one round trip if it can) and returns their
	// messages, each list newest first.
	Read(reads []Read[P]) ([][]M, error)
	// Key returns m's key.
	Key(m M) Key
}

// Sizes of the reads Page makes.
const (
	partitionPage = 256 // partitions loaded at a time
	maxReads      = 64  // partition reads sent together
	maxRead       = 500 // messages per partition read
)

// cursor is one partition in the merge.
type cursor[P, M any] struct {
	p       P
	head    Key   // the key of buf[0], or an upper bound of the next unread message's
	buf     []M   // read, not yet emitted
	below   int64 // the next read continues below this offset (0: from the top)
	read    bool  // buf holds what a read returned; false: needs a read
	drained bool  // the partition has nothing below buf
}

type cursors[P, M any] []*cursor[P, M]

func (h cursors[P, M]) Len() int           { return len(h) }
func (h cursors[P, M]) Less(i, j int) bool { return h[j].head.Less(h[i].head) } // newest on top
func (h cursors[P, M]) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *cursors[P, M]) Push(x any)        { *h = append(*h, x.(*cursor[P, M])) }
func (h *cursors[P, M]) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// Page returns the messages from offset to offset+limit of the merged
// partitions, newest first.
func Page[P, M any](src Source[P, M], offset, limit int) ([]M, error) {
	if offset < 0 || limit <= 0 {
		return nil, fmt.Errorf("newest: bad page offset %d limit %d", offset, limit)
	}
	want := offset + limit
	var (
		h       cursors[P, M]
		loaded  []P // partitions loaded, not yet merged
		skip    int // partitions loaded so far
		allSeen bool
		out     = make([]M, 0, min(limit, maxRead))
		emitted int
	)
	// next returns the next partition in head order, loading a page when
	// needed; ok is false when there is none.
	next := func() (p P, ok bool, err error) {
		if len(loaded) == 0 && !allSeen {
			page, err := src.Partitions(skip, partitionPage)
			if err != nil {
				return p, false, err
			}
			skip += len(page)
			allSeen = len(page) < partitionPage
			loaded = page
		}
		if len(loaded) == 0 {
			return p, false, nil
		}
		return loaded[0], true, nil
	}
	for emitted < want {
		// Partitions whose head beats the best key in hand join the merge.
		for {
			p, ok, err := next()
			if err != nil {
				return nil, err
			}
			if !ok || (h.Len() > 0 && !h[0].head.Less(src.Head(p))) {
				break
			}
			loaded = loaded[1:]
			heap.Push(&h, &cursor[P, M]{p: p, head: src.Head(p)})
		}
		if h.Len() == 0 {
			break
		}
		top := h[0]
		if !top.read {
			if err := fill(src, h, want-emitted); err != nil {
				return nil, err
			}
			// A partition a read found empty below its cursor leaves.
			kept := h[:0]
			for _, c := range h {
				if !c.read || len(c.buf) > 0 {
					kept = append(kept, c)
				}
			}
			h = kept
			heap.Init(&h)
			continue
		}
		m := top.buf[0]
		top.buf = top.buf[1:]
		if emitted >= offset {
			out = append(out, m)
		}
		emitted++
		switch {
		case len(top.buf) > 0:
			top.head = src.Key(top.buf[0])
			heap.Fix(&h, 0)
		case top.drained:
			heap.Pop(&h)
		default:
			// Read on below the last message; its key bounds the rest.
			top.below, top.head, top.read = src.Key(m).Seq, src.Key(m), false
			heap.Fix(&h, 0)
		}
	}
	return out, nil
}

// fill reads the next messages of the top cursor and of up to maxReads-1
// other cursors that need a read, in one call.
func fill[P, M any](src Source[P, M], h cursors[P, M], need int) error {
	size := min(max(need, 1), maxRead)
	var reads []Read[P]
	var who []*cursor[P, M]
	for _, c := range h {
		if !c.read && len(reads) < maxReads {
			reads = append(reads, Read[P]{Partition: c.p, Below: c.below, Limit: size})
			who = append(who, c)
		}
	}
	res, err := src.Read(reads)
	if err != nil {
		return err
	}
	if len(res) != len(reads) {
		return fmt.Errorf("newest: %d reads answered %d times", len(reads), len(res))
	}
	for i, c := range who {
		c.buf, c.read, c.drained = res[i], true, len(res[i]) < size
		if len(c.buf) > 0 {
			c.head = src.Key(c.buf[0])
		}
	}
	return nil
}
