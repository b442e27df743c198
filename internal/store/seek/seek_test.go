package seek

import (
	"math/rand/v2"
	"testing"
)

// partition is a test partition: offsets (with gaps, as on SQLite) and
// their createdAt, both ascending.
type partition struct {
	offsets, created []int64
}

func (p partition) first(from, to int64) Found {
	for i, off := range p.offsets {
		if off >= from && off <= to {
			return Found{Offset: off, CreatedAt: p.created[i], OK: true}
		}
	}
	return Found{}
}

// want is the definition: the last message created at or before ts, or lo.
func (p partition) want(lo, ts int64) int64 {
	cur := lo
	for i, off := range p.offsets {
		if off > lo && p.created[i] <= ts {
			cur = off
		}
	}
	return cur
}

func TestCursorsMatchesALinearScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		n := 1 + rng.IntN(8)
		parts := make([]partition, n)
		ranges := make([]Range, n)
		for i := range parts {
			var off, at int64 = 0, 1000
			for range rng.IntN(60) {
				off += 1 + rng.Int64N(5) // gaps
				at += rng.Int64N(3)      // ties are common: a push shares one createdAt
				parts[i].offsets = append(parts[i].offsets, off)
				parts[i].created = append(parts[i].created, at)
			}
			lo := int64(0)
			if len(parts[i].offsets) > 3 && rng.IntN(3) == 0 {
				lo = parts[i].offsets[2] // cleared up to here
			}
			ranges[i] = Range{Partition: int64(i), Lo: lo, Hi: off}
		}
		ts := 995 + rng.Int64N(80)
		probes := 0
		got, err := Cursors(ranges, ts, func(ps, from, to []int64) ([]Found, error) {
			probes++
			out := make([]Found, len(ps))
			for k, p := range ps {
				out[k] = parts[p].first(from[k], to[k])
			}
			return out, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for i := range parts {
			if w := parts[i].want(ranges[i].Lo, ts); got[i] != w {
				t.Fatalf("round %d partition %d ts %d: cursor %d, want %d (offsets %v created %v)",
					round, i, ts, got[i], w, parts[i].offsets, parts[i].created)
			}
		}
		if probes > 12 {
			t.Fatalf("round %d: %d lockstep probes for ranges under 300 offsets", round, probes)
		}
	}
}

func TestCursorsEmptyRange(t *testing.T) {
	got, err := Cursors([]Range{{Lo: 7, Hi: 7}, {Lo: 9, Hi: 3}}, 100, func(ps, from, to []int64) ([]Found, error) {
		t.Fatal("probed an empty range")
		return nil, nil
	})
	if err != nil || got[0] != 7 || got[1] != 9 {
		t.Fatalf("got %v %v, want [7 9]", got, err)
	}
}
