package bench

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// Delivery is one message as a consumer saw it: the partition it came from
// and the producer and sequence number stamped in its payload.
type Delivery struct {
	Partition string
	Producer  int
	Seq       int64
}

// Violation kinds.
const (
	KindLost       = "lost"
	KindDuplicate  = "duplicate"
	KindOrder      = "out of order"
	KindMisrouted  = "wrong partition"
	KindUnexpected = "unexpected"
)

// maxDetails bounds how many violations of each kind are kept verbatim; the
// counts stay exact.
const maxDetails = 20

// Verifier checks what consumers received against what producers sent:
// every message arrives in every group (no loss), at most once per group (no
// duplicate), on the partition it was pushed to, and, per (partition,
// producer), in increasing sequence order.
//
// Producers number their messages 0, 1, 2, … so a group's "seen" set is a
// bitset per producer, which stays small even for millions of messages.
type Verifier struct {
	mu         sync.Mutex
	partitions int
	// checkAcrossBatches is false when deliveries of one lane may be
	// recorded out of the order the broker handed them out (autoAck with
	// several consumers in a group: the broker moves on before the first
	// consumer has even read its response). Order is then checked within
	// each delivered batch only.
	checkAcrossBatches bool
	groups             []*groupState
	counts             map[string]int64
	details            map[string][]string
}

type groupState struct {
	name   string
	seen   [][]uint64 // per producer, bit seq set when received
	unique int64
	last   map[laneProducer]int64 // highest seq received per (partition, producer)
}

type laneProducer struct {
	partition string
	producer  int
}

// NewVerifier returns a verifier for the named groups (use one name, e.g.
// the queue-mode group, when there are no consumer groups). partitions is
// the number of partitions producers spread over, used to check routing.
func NewVerifier(groups []string, partitions int, checkAcrossBatches bool) *Verifier {
	v := &Verifier{
		partitions:         partitions,
		checkAcrossBatches: checkAcrossBatches,
		counts:             make(map[string]int64),
		details:            make(map[string][]string),
	}
	for _, g := range groups {
		v.groups = append(v.groups, &groupState{name: g, last: make(map[laneProducer]int64)})
	}
	return v
}

// PartitionFor is how producers spread messages: producer p sends its
// message seq to partition (p+seq) mod partitions, so each producer writes
// every partition in turn and each partition holds an increasing
// subsequence of every producer's messages.
func PartitionFor(producer int, seq int64, partitions int) int {
	return int((int64(producer) + seq) % int64(partitions))
}

// PartitionName is the partition name for index k.
func PartitionName(k int) string { return fmt.Sprintf("p-%d", k) }

func (v *Verifier) violate(kind, format string, args ...any) {
	v.counts[kind]++
	if len(v.details[kind]) < maxDetails {
		v.details[kind] = append(v.details[kind], fmt.Sprintf(format, args...))
	}
}

// Record checks one delivered batch for group g (an index into the names
// given to NewVerifier). Call it before acknowledging the batch, so that the
// next batch of the same lane, which the broker only hands out after the
// ack, is always recorded after this one.
func (v *Verifier) Record(g int, batch []Delivery) {
	v.mu.Lock()
	defer v.mu.Unlock()
	gs := v.groups[g]
	// Within one batch order is always checkable, whatever the ack mode.
	var inBatch map[laneProducer]int64
	if !v.checkAcrossBatches {
		inBatch = make(map[laneProducer]int64)
	}
	for _, d := range batch {
		if d.Producer < 0 || d.Seq < 0 {
			v.violate(KindUnexpected, "group %s: bad producer/sequence %d/%d", gs.name, d.Producer, d.Seq)
			continue
		}
		if want := PartitionName(PartitionFor(d.Producer, d.Seq, v.partitions)); d.Partition != want {
			v.violate(KindMisrouted, "group %s: producer %d seq %d arrived on %q, was pushed to %q",
				gs.name, d.Producer, d.Seq, d.Partition, want)
		}
		for len(gs.seen) <= d.Producer {
			gs.seen = append(gs.seen, nil)
		}
		bitsOf := gs.seen[d.Producer]
		word, bit := int(d.Seq/64), uint(d.Seq%64)
		if word >= len(bitsOf) {
			grown := make([]uint64, max(word+1, 2*len(bitsOf)))
			copy(grown, bitsOf)
			bitsOf = grown
			gs.seen[d.Producer] = bitsOf
		}
		if bitsOf[word]&(1<<bit) != 0 {
			v.violate(KindDuplicate, "group %s: producer %d seq %d delivered again (partition %s)",
				gs.name, d.Producer, d.Seq, d.Partition)
			continue // a redelivery is a duplicate, not also an order violation
		}
		bitsOf[word] |= 1 << bit
		gs.unique++

		k := laneProducer{d.Partition, d.Producer}
		last := gs.last
		if inBatch != nil {
			last = inBatch
		}
		if prev, ok := last[k]; ok && d.Seq < prev {
			v.violate(KindOrder, "group %s: partition %s producer %d: seq %d after seq %d",
				gs.name, d.Partition, d.Producer, d.Seq, prev)
		}
		if prev, ok := last[k]; !ok || d.Seq > prev {
			last[k] = d.Seq
		}
	}
}

// Unique returns how many distinct messages group g has received.
func (v *Verifier) Unique(g int) int64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.groups[g].unique
}

// TotalUnique returns the distinct messages received summed over groups.
func (v *Verifier) TotalUnique() int64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	var n int64
	for _, gs := range v.groups {
		n += gs.unique
	}
	return n
}

// Sent describes what one producer pushed: sequences 0..Attempted-1, of
// which those in Unconfirmed may or may not have been stored (the push
// failed or its outcome is unknown), so they are neither required nor
// unexpected.
type Sent struct {
	Attempted   int64
	Unconfirmed map[int64]bool
}

// Expected returns how many messages each group must receive.
func (s Sent) Expected() int64 { return s.Attempted - int64(len(s.Unconfirmed)) }

// Finish checks loss and stray messages against what producers sent
// (indexed by producer id). Call it once, after consumers stopped.
func (v *Verifier) Finish(sent []Sent) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, gs := range v.groups {
		for p := range max(len(sent), len(gs.seen)) {
			var bitsOf []uint64
			if p < len(gs.seen) {
				bitsOf = gs.seen[p]
			}
			var s Sent
			if p < len(sent) {
				s = sent[p]
			}
			has := func(seq int64) bool {
				w := int(seq / 64)
				return w < len(bitsOf) && bitsOf[w]&(1<<uint(seq%64)) != 0
			}
			// Report losses as ranges: a lost batch is one line, not 100.
			var from int64 = -1
			flush := func(to int64) {
				if from >= 0 {
					n := to - from
					v.counts[KindLost] += n - 1 // violate adds the last one
					if n == 1 {
						v.violate(KindLost, "group %s: producer %d seq %d never arrived", gs.name, p, from)
					} else {
						v.violate(KindLost, "group %s: producer %d seq %d-%d never arrived (%d messages)",
							gs.name, p, from, to-1, n)
					}
					from = -1
				}
			}
			for seq := range s.Attempted {
				if has(seq) || s.Unconfirmed[seq] {
					flush(seq)
					continue
				}
				if from < 0 {
					from = seq
				}
			}
			flush(s.Attempted)
			// Anything received beyond what was sent was never pushed by us.
			for w := int(s.Attempted / 64); w < len(bitsOf); w++ {
				for b := range 64 {
					seq := int64(w*64 + b)
					if seq >= s.Attempted && bitsOf[w]&(1<<uint(b)) != 0 {
						v.violate(KindUnexpected, "group %s: producer %d seq %d was never sent", gs.name, p, seq)
					}
				}
			}
		}
	}
}

// Violations returns the number of violations of each kind.
func (v *Verifier) Violations() map[string]int64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make(map[string]int64, len(v.counts))
	for k, n := range v.counts {
		out[k] = n
	}
	return out
}

// Total returns the number of violations of all kinds.
func (v *Verifier) Total() int64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	var n int64
	for _, c := range v.counts {
		n += c
	}
	return n
}

// Details returns up to maxDetails descriptions per kind, kinds sorted.
func (v *Verifier) Details() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	kinds := make([]string, 0, len(v.details))
	for k := range v.details {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var out []string
	for _, k := range kinds {
		for _, d := range v.details[k] {
			out = append(out, k+": "+d)
		}
		if extra := v.counts[k] - int64(len(v.details[k])); extra > 0 && k != KindLost {
			out = append(out, fmt.Sprintf("%s: … and %d more", k, extra))
		}
	}
	return out
}

// summary renders the counts as "lost=3 duplicate=1".
func summarizeCounts(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(parts, " ")
}
