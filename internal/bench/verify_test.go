package bench

import (
	"strings"
	"testing"
)

// sendAll returns the deliveries producer p's messages from..to-1 produce
// when routed as producers route them.
func sendAll(p int, from, to int64, partitions int) []Delivery {
	var out []Delivery
	for s := from; s < to; s++ {
		out = append(out, Delivery{Partition: PartitionName(PartitionFor(p, s, partitions)), Producer: p, Seq: s})
	}
	return out
}

func sent(n ...int64) []Sent {
	out := make([]Sent, len(n))
	for i, a := range n {
		out[i] = Sent{Attempted: a}
	}
	return out
}

func TestVerifierCleanRun(t *testing.T) {
	v := NewVerifier([]string{"a", "b"}, 4, true)
	for g := range 2 {
		for p := range 3 {
			v.Record(g, sendAll(p, 0, 50, 4))
			v.Record(g, sendAll(p, 50, 100, 4))
		}
	}
	v.Finish(sent(100, 100, 100))
	if v.Total() != 0 {
		t.Fatalf("clean run reported %v: %v", v.Violations(), v.Details())
	}
	if v.Unique(0) != 300 || v.TotalUnique() != 600 {
		t.Fatalf("unique %d/%d", v.Unique(0), v.TotalUnique())
	}
}

func TestVerifierDetectsLossAsRanges(t *testing.T) {
	v := NewVerifier([]string{"g"}, 2, true)
	d := sendAll(0, 0, 100, 2)
	v.Record(0, d[:10])
	v.Record(0, d[20:99])  // 10..19 and 99 lost
	v.Finish(sent(100, 5)) // producer 1 sent 5, none arrived
	got := v.Violations()[KindLost]
	if got != 10+1+5 {
		t.Fatalf("lost = %d, want 16; %v", got, v.Details())
	}
	details := strings.Join(v.Details(), "\n")
	for _, want := range []string{"producer 0 seq 10-19 never arrived (10 messages)", "producer 0 seq 99 never arrived",
		"producer 1 seq 0-4 never arrived"} {
		if !strings.Contains(details, want) {
			t.Errorf("details lack %q:\n%s", want, details)
		}
	}
}

func TestVerifierUnconfirmedIsNeitherLostNorUnexpected(t *testing.T) {
	v := NewVerifier([]string{"g"}, 1, true)
	d := sendAll(0, 0, 10, 1)
	v.Record(0, append(d[:3:3], d[5:]...)) // 3 and 4 missing, 5 arrived
	v.Finish([]Sent{{Attempted: 10, Unconfirmed: map[int64]bool{3: true, 4: true, 5: true}}})
	if v.Total() != 0 {
		t.Fatalf("unconfirmed pushes counted: %v", v.Details())
	}
}

func TestVerifierDetectsDuplicates(t *testing.T) {
	v := NewVerifier([]string{"a", "b"}, 1, true)
	d := sendAll(0, 0, 10, 1)
	v.Record(0, d)
	v.Record(0, d[8:]) // redelivered to group a
	v.Record(1, d)     // group b getting the same messages is fan-out, not a duplicate
	v.Finish(sent(10))
	if got := v.Violations(); got[KindDuplicate] != 2 || v.Total() != 2 {
		t.Fatalf("violations %v, want 2 duplicates only: %v", got, v.Details())
	}
}

func TestVerifierDetectsReordering(t *testing.T) {
	v := NewVerifier([]string{"g"}, 1, true)
	d := sendAll(0, 0, 10, 1)
	v.Record(0, d[5:])
	v.Record(0, d[:5]) // an earlier batch overtaken by a later one
	v.Finish(sent(10))
	if got := v.Violations(); got[KindOrder] != 5 || v.Total() != 5 {
		t.Fatalf("violations %v, want 5 out of order: %v", got, v.Details())
	}

	// Different producers and different partitions are independent.
	v = NewVerifier([]string{"g"}, 2, true)
	v.Record(0, sendAll(1, 0, 10, 2))
	v.Record(0, sendAll(0, 0, 10, 2))
	v.Record(0, sendAll(0, 10, 20, 2))
	v.Finish(sent(20, 10))
	if v.Total() != 0 {
		t.Fatalf("independent streams flagged: %v", v.Details())
	}
}

func TestVerifierWithinBatchOrderOnly(t *testing.T) {
	// autoAck with several consumers: batches of a lane may be recorded in
	// either order, but a batch itself must be in order.
	v := NewVerifier([]string{"g"}, 1, false)
	d := sendAll(0, 0, 10, 1)
	v.Record(0, d[5:])
	v.Record(0, d[:5])
	if v.Total() != 0 {
		t.Fatalf("cross-batch order checked: %v", v.Details())
	}
	v.Record(0, []Delivery{{"p-0", 1, 3}, {"p-0", 1, 2}})
	if v.Violations()[KindOrder] != 1 {
		t.Fatalf("within-batch reordering missed: %v", v.Details())
	}
}

func TestVerifierDetectsMisroutingAndStrays(t *testing.T) {
	v := NewVerifier([]string{"g"}, 4, true)
	v.Record(0, []Delivery{
		{Partition: PartitionName(PartitionFor(0, 0, 4)), Producer: 0, Seq: 0},
		{Partition: "p-3", Producer: 0, Seq: 1},                                // belongs on p-1
		{Partition: PartitionName(PartitionFor(0, 7, 4)), Producer: 0, Seq: 7}, // never sent
		{Partition: "p-0", Producer: -1, Seq: 0},
	})
	v.Finish(sent(2))
	got := v.Violations()
	if got[KindMisrouted] != 1 || got[KindUnexpected] != 2 || v.Total() != 3 {
		t.Fatalf("violations %v: %v", got, v.Details())
	}
}
