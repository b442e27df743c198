// Package listing pages through messages for the control plane's listing
// (store.MessageControlStore.MessageList), newest first across partitions,
// without an index on creation time.
//
// A partition's messages are created in offset order, so each partition is a
// list sorted newest first along its primary key, and a listing is a merge
// of those lists. Every partition row records when it last received a
// message (last_message_at), an upper bound of its messages' creation
// times: the merge opens partitions in that order and stops as soon as the
// next unopened partition cannot hold anything newer than what remains to
// list. A page therefore reads about as many partitions and messages as it
// lists, however many messages the queue holds, and no push pays for an
// extra index.
//
// Each driver supplies the partitions and their messages; this package
// merges, decides every message's standing (lane.StandingOf), applies the
// status filter and the offset, and bounds the work, so that both engines
// list exactly alike.
package listing

import (
	"cmp"
	"container/heap"
	"slices"
	"time"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/lane"
)

// Partition is a partition a listing may read: its id, the upper bound of
// its messages' creation times, and, for a status filter, what its lanes
// and dead letters say about where messages of that status can be.
type Partition struct {
	Cleared int64 // every message at or below this offset is gone
	Key     int64 // the driver's partition id
	Newest  int64 // Unix ms; no message of the partition was created later

	// Read only with a status filter.
	DeadLetters bool  // some message of it has a dead letter
	LastOffset  int64 // its newest offset
	Leased      bool  // a live lease holds some of it
	MinCursor   int64 // the lowest cursor of its lanes; -1 when no group reads it
}

// bounds returns the offsets (floor, ceil) between which messages of the
// status can lie, exclusive (ceil 0: no bound), and false when none can:
// nothing lies at or below the cleared offset (those messages are gone,
// even while their rows wait to be freed), completed messages are at or
// below every cursor, pending and processing ones above the lowest,
// processing ones only under a live lease, and dead-lettered ones only
// where dead letters exist.
func (pt *Partition) bounds(status store.MessageStatus) (floor, ceil int64, ok bool) {
	cursor := max(pt.MinCursor, pt.Cleared)
	switch status {
	case store.StatusCompleted:
		return pt.Cleared, cursor + 1, pt.MinCursor > pt.Cleared
	case store.StatusPending:
		return cursor, 0, pt.MinCursor < 0 || cursor < pt.LastOffset
	case store.StatusProcessing:
		return cursor, 0, pt.Leased
	case store.StatusDeadLetter:
		return pt.Cleared, 0, pt.DeadLetters
	}
	return pt.Cleared, 0, true
}

// Row is one message as a driver reads it.
type Row struct {
	CreatedAt     int64 // Unix ms
	DeadLettered  bool
	ID            string
	Offset        int64
	ProducerSub   string
	TraceID       string
	TransactionID string
}

// Source is a driver's side of a listing.
type Source interface {
	// Partitions returns the partitions the filters select that may hold
	// messages of the window (Newest at or after its start); with a status
	// filter, with their lanes' and dead letters' facts.
	Partitions(status store.MessageStatus) ([]Partition, error)
	// Describe returns what the messages of each partition share: Queue,
	// Partition, PartitionID, Namespace, Task and QueuePriority.
	Describe(keys []int64) (map[int64]store.ListedMessage, error)
	// Newest returns, for each partition keys[i], up to n of its messages
	// created before the window's end with an offset in (floor[i],
	// below[i]) (below 0: no bound), newest first; only dead-lettered ones
	// when dead is set, read through the dead letters.
	Newest(keys, floor, below []int64, n int, dead bool) ([][]Row, error)
	// Lanes returns the lanes (one per consumer group) of the partitions.
	Lanes(keys []int64) (map[int64][]lane.Group, error)
}

// Defaults and bounds of a listing.
const (
	DefaultLimit = 200
	openBatch    = 32   // partitions opened per Newest call
	firstRows    = 8    // rows read from a partition when it is opened
	deepRows     = 32   // the same when a status filter is likely to read deeper
	maxRows      = 1024 // rows per later read of one partition
)

// cursor is an opened partition: rows buffered newest first.
type cursor struct {
	floor int64
	part  *Partition
	info  store.ListedMessage
	rows  []Row
	next  int  // rows to read next time
	done  bool // nothing below rows
	lanes []lane.Group
}

func (c *cursor) key() key { r := &c.rows[0]; return key{r.CreatedAt, c.part.Key, r.Offset} }

// key orders messages newest first: creation time, then partition, then
// offset, all descending.
type key struct{ at, part, off int64 }

func (a key) less(b key) int {
	return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.part, b.part), cmp.Compare(a.off, b.off))
}

// cursors is a max-heap of opened partitions by their next message.
type cursors []*cursor

func (h cursors) Len() int           { return len(h) }
func (h cursors) Less(i, j int) bool { return h[i].key().less(h[j].key()) > 0 }
func (h cursors) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *cursors) Push(x any)        { *h = append(*h, x.(*cursor)) }
func (h *cursors) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// Collect lists a page of p from src: messages created in [p.From, p.To),
// newest first, p.Offset of them (of the requested status) skipped. At most
// store.MessageListScanLimit messages are examined.
func Collect(p *store.MessageListParams, src Source) ([]store.ListedMessage, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	from, nowMs := p.From.UnixMilli(), p.Now.UnixMilli()
	// The partitions' facts bound where a status can be by every group's
	// lanes; judged by one group's lane, a status can be anywhere.
	bound := p.Status
	if p.Group != "" {
		bound = ""
	}
	all, err := src.Partitions(bound)
	if err != nil {
		return nil, err
	}
	parts := all[:0]
	for _, pt := range all {
		if _, _, ok := pt.bounds(bound); ok {
			parts = append(parts, pt)
		}
	}
	dead := bound == store.StatusDeadLetter
	slices.SortFunc(parts, func(a, b Partition) int {
		return cmp.Or(cmp.Compare(b.Newest, a.Newest), cmp.Compare(b.Key, a.Key))
	})
	first := firstRows
	if p.Status != "" {
		first = deepRows
	}
	out := make([]store.ListedMessage, 0, min(limit, 256))
	h := &cursors{}
	opened, skipped, examined := 0, 0, 0
	for examined < store.MessageListScanLimit {
		// Open partitions while the next unopened one could hold a message
		// newer than the newest buffered.
		if opened < len(parts) && (h.Len() == 0 ||
			(key{parts[opened].Newest, parts[opened].Key, 1<<63 - 1}).less((*h)[0].key()) > 0) {
			if err := open(src, parts[opened:min(opened+openBatch, len(parts))], bound, p.Group, first, h); err != nil {
				return nil, err
			}
			opened = min(opened+openBatch, len(parts))
			continue
		}
		if h.Len() == 0 {
			break
		}
		c := (*h)[0]
		r := c.rows[0]
		if r.CreatedAt < from {
			break // the newest message left is older than the window
		}
		examined++
		m := stand(c, &r, nowMs)
		if p.Status == "" || m.Status == p.Status {
			if skipped < p.Offset {
				skipped++
			} else if out = append(out, m); len(out) == limit {
				break
			}
		}
		if c.rows = c.rows[1:]; len(c.rows) > 0 {
			heap.Fix(h, 0)
			continue
		}
		if c.done {
			heap.Pop(h)
			continue
		}
		rows, err := src.Newest([]int64{c.part.Key}, []int64{c.floor}, []int64{r.Offset}, c.next, dead)
		if err != nil {
			return nil, err
		}
		c.rows, c.done = rows[0], len(rows[0]) < c.next
		c.next = min(c.next*4, maxRows)
		if len(c.rows) == 0 {
			heap.Pop(h)
		} else {
			heap.Fix(h, 0)
		}
	}
	return out, nil
}

// open reads the newest messages and the lanes of parts (group's alone
// when it is set) and adds those that hold any to the heap.
func open(src Source, parts []Partition, status store.MessageStatus, group string, first int, h *cursors) error {
	keys, floors, ceils := make([]int64, len(parts)), make([]int64, len(parts)), make([]int64, len(parts))
	for i := range parts {
		keys[i] = parts[i].Key
		floors[i], ceils[i], _ = parts[i].bounds(status)
	}
	rows, err := src.Newest(keys, floors, ceils, first, status == store.StatusDeadLetter)
	if err != nil {
		return err
	}
	var keep []int64
	for i := range parts {
		if len(rows[i]) > 0 {
			keep = append(keep, keys[i])
		}
	}
	if len(keep) == 0 {
		return nil
	}
	lanes, err := src.Lanes(keep)
	if err != nil {
		return err
	}
	infos, err := src.Describe(keep)
	if err != nil {
		return err
	}
	for i := range parts {
		if len(rows[i]) == 0 {
			continue
		}
		ls := lanes[keys[i]]
		if group != "" {
			ls = slices.DeleteFunc(ls, func(g lane.Group) bool { return g.Name != group })
		}
		heap.Push(h, &cursor{part: &parts[i], floor: floors[i], info: infos[keys[i]], rows: rows[i], next: first * 4,
			done: len(rows[i]) < first, lanes: ls})
	}
	return nil
}

// stand builds a listed message and its standing.
func stand(c *cursor, r *Row, nowMs int64) store.ListedMessage {
	st := lane.StandingOf(r.Offset, c.lanes, r.DeadLettered, nowMs)
	m := c.info
	m.ID, m.TransactionID, m.TraceID, m.ProducerSub = r.ID, r.TransactionID, r.TraceID, r.ProducerSub
	m.CreatedAt = time.UnixMilli(r.CreatedAt).UTC()
	m.Status, m.ConsumedBy, m.TotalGroups = st.Status, st.ConsumedBy, st.TotalGroups
	m.LeaseExpiresAt = Millis(st.LeaseExpiresAt)
	return m
}

// Standing sets the standing of the message at offset seq in d, which the
// engine filled with the message's identity (ids, names, times): what its
// consumer groups make of it (lane.StandingOf), and each group's own view
// (consumed, or held by a live lease), as GET /api/v1/messages/... shows.
func Standing(d *store.MessageDetail, seq int64, groups []lane.Group, dead bool, nowMs int64) {
	st := lane.StandingOf(seq, groups, dead, nowMs)
	m := &d.ListedMessage
	m.ConsumedBy, m.LeaseExpiresAt, m.Status, m.TotalGroups = st.ConsumedBy, Millis(st.LeaseExpiresAt), st.Status,
		st.TotalGroups
	d.HasQueueMode = st.HasQueueMode
	d.Groups = make([]store.GroupStanding, 0, len(groups))
	for _, g := range groups {
		gs := store.GroupStanding{Name: g.Name, Consumed: g.State.Cursor >= seq}
		if g.State.Holds(seq, nowMs) {
			gs.LeaseExpiresAt = Millis(g.State.LeaseExpiresAt)
		}
		d.Groups = append(d.Groups, gs)
	}
}

// Millis returns the UTC time of ms Unix milliseconds, nil for 0.
func Millis(ms int64) *time.Time {
	if ms == 0 {
		return nil
	}
	t := time.UnixMilli(ms).UTC()
	return &t
}

// Mode summarises the consumer groups that joined the selected queues.
func Mode(groups []string) store.QueueModeSummary {
	var m store.QueueModeSummary
	seen := make(map[string]bool, len(groups))
	for _, g := range groups {
		if seen[g] {
			continue
		}
		seen[g] = true
		if g == store.QueueMode {
			m.HasQueueMode = true
		} else {
			m.BusGroups++
		}
	}
	return m
}
