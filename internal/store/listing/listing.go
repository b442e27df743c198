// Package listing pages through messages for the control plane's listing
// (store.MessageControlStore.MessageList). Each driver supplies the rows, newest
// first, and the lanes of their partitions; this package decides every
// message's standing (lane.StandingOf), applies the status filter and the
// offset, and bounds the work, so that both engines list exactly alike.
package listing

import (
	"time"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/lane"
)

// Row is one message as a driver reads it for a listing.
type Row struct {
	store.ListedMessage
	DeadLettered bool
	Offset       int64 // within its partition
	PartitionKey int64 // the driver's partition id
}

// Source is a driver's side of a listing.
type Source interface {
	// Next returns up to n rows following the last one it returned (the
	// first call starts at the top of the window), newest first, created
	// before the window's end. Fewer than n rows means there are no more.
	// Rows may run past the window's start: the first row created before
	// it ends the listing.
	Next(n int) ([]Row, error)
	// Lanes returns the lanes (one per consumer group) of the given
	// partitions.
	Lanes(partitions []int64) (map[int64][]lane.Group, error)
}

// Defaults and bounds of a listing.
const (
	DefaultLimit = 200
	chunk        = 1000 // rows per Next when a status filter reads past the page
)

// Collect lists a page of p from src.
//
// Without a status filter it reads only the page (offset and limit rows) and
// the lanes of the page's partitions. With one it reads chunks until the page
// is full, the rows run out or store.MessageListScanLimit candidates were
// examined.
func Collect(p *store.MessageListParams, src Source) ([]store.ListedMessage, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	want := p.Offset + limit
	from := p.From.UnixMilli()
	nowMs := p.Now.UnixMilli()
	lanes := make(map[int64][]lane.Group)
	out := make([]store.ListedMessage, 0, min(limit, 256))

	if p.Status == "" {
		rows, err := src.Next(want)
		if err != nil {
			return nil, err
		}
		rows = inWindow(rows, from)
		if len(rows) <= p.Offset {
			return out, nil
		}
		rows = rows[p.Offset:]
		if err := loadLanes(src, rows, lanes); err != nil {
			return nil, err
		}
		for i := range rows {
			out = append(out, stand(&rows[i], lanes, nowMs))
		}
		return out, nil
	}

	skipped, examined := 0, 0
	for {
		rows, err := src.Next(chunk)
		if err != nil {
			return nil, err
		}
		more := len(rows) == chunk
		if w := inWindow(rows, from); len(w) < len(rows) {
			rows, more = w, false
		}
		if err := loadLanes(src, rows, lanes); err != nil {
			return nil, err
		}
		for i := range rows {
			examined++
			m := stand(&rows[i], lanes, nowMs)
			if m.Status != p.Status {
				continue
			}
			if skipped < p.Offset {
				skipped++
				continue
			}
			out = append(out, m)
			if len(out) == limit {
				return out, nil
			}
		}
		if !more || examined >= store.MessageListScanLimit {
			return out, nil
		}
	}
}

// inWindow cuts rows at the first one created before from (rows are newest
// first, and createdAt grows with the offset within a partition).
func inWindow(rows []Row, from int64) []Row {
	for i := range rows {
		if rows[i].CreatedAt.UnixMilli() < from {
			return rows[:i]
		}
	}
	return rows
}

// loadLanes fetches the lanes of the rows' partitions not fetched yet.
func loadLanes(src Source, rows []Row, lanes map[int64][]lane.Group) error {
	var missing []int64
	for i := range rows {
		k := rows[i].PartitionKey
		if _, ok := lanes[k]; !ok {
			lanes[k] = nil
			missing = append(missing, k)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	got, err := src.Lanes(missing)
	if err != nil {
		return err
	}
	for k, g := range got {
		lanes[k] = g
	}
	return nil
}

// stand fills a row's standing from its partition's lanes.
func stand(r *Row, lanes map[int64][]lane.Group, nowMs int64) store.ListedMessage {
	st := lane.StandingOf(r.Offset, lanes[r.PartitionKey], r.DeadLettered, nowMs)
	m := r.ListedMessage
	m.Status = st.Status
	m.ConsumedBy, m.TotalGroups = st.ConsumedBy, st.TotalGroups
	m.LeaseExpiresAt = Millis(st.LeaseExpiresAt)
	return m
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
