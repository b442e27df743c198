package newest

import (
	"math/rand/v2"
	"slices"
	"testing"
)

type msg struct {
	part int
	key  Key
}

// memSource is a Source over partitions held in memory, counting reads.
type memSource struct {
	parts [][]msg // each oldest first
	order []int   // partitions by head, descending
	reads int
	rows  int
}

func newMemSource(parts [][]msg) *memSource {
	s := &memSource{parts: parts}
	for i, p := range parts {
		if len(p) > 0 {
			s.order = append(s.order, i)
		}
	}
	slices.SortFunc(s.order, func(a, b int) int {
		ha, hb := s.Head(a), s.Head(b)
		switch {
		case hb.Less(ha):
			return -1
		case ha.Less(hb):
			return 1
		}
		return 0
	})
	return s
}

func (s *memSource) Partitions(skip, limit int) ([]int, error) {
	if skip >= len(s.order) {
		return nil, nil
	}
	return s.order[skip:min(len(s.order), skip+limit)], nil
}

func (s *memSource) Head(p int) Key { return s.parts[p][len(s.parts[p])-1].key }

func (s *memSource) Key(m msg) Key { return m.key }

func (s *memSource) Read(reads []Read[int]) ([][]msg, error) {
	s.reads++
	out := make([][]msg, len(reads))
	for i, r := range reads {
		p := s.parts[r.Partition]
		for j := len(p) - 1; j >= 0 && len(out[i]) < r.Limit; j-- {
			if r.Below == 0 || p[j].key.Seq < r.Below {
				out[i] = append(out[i], p[j])
			}
		}
		s.rows += len(out[i])
	}
	return out, nil
}

// all returns every message, newest first.
func (s *memSource) all() []msg {
	var out []msg
	for _, p := range s.parts {
		out = append(out, p...)
	}
	slices.SortFunc(out, func(a, b msg) int {
		switch {
		case b.key.Less(a.key):
			return -1
		case a.key.Less(b.key):
			return 1
		}
		return 0
	})
	return out
}

// build makes parts partitions of random sizes; with globalSeq the time is
// a global offset (the embedded engine), otherwise a coarse clock shared by
// many messages (PostgreSQL's createdAt).
func build(r *rand.Rand, parts, maxPer int, globalSeq bool) [][]msg {
	out := make([][]msg, parts)
	seqs := make([]int64, parts)
	var global, clock int64
	total := r.IntN(parts*maxPer + 1)
	for range total {
		p := r.IntN(parts)
		seqs[p]++
		global++
		if r.IntN(4) == 0 {
			clock++
		}
		k := Key{Time: clock, Part: int64(p), Seq: seqs[p]}
		if globalSeq {
			k = Key{Time: global, Seq: global}
		}
		out[p] = append(out[p], msg{part: p, key: k})
	}
	return out
}

func TestPageMatchesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for round := range 300 {
		src := newMemSource(build(r, 1+r.IntN(40), 1+r.IntN(60), round%2 == 0))
		all := src.all()
		offset, limit := r.IntN(len(all)+5), 1+r.IntN(30)
		got, err := Page(src, offset, limit)
		if err != nil {
			t.Fatal(err)
		}
		want := all[min(offset, len(all)):min(offset+limit, len(all))]
		if len(got) != len(want) {
			t.Fatalf("round %d offset %d limit %d: %d messages, want %d", round, offset, limit, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("round %d offset %d limit %d: message %d is %+v, want %+v", round, offset, limit, i, got[i], want[i])
			}
		}
	}
}

// A page reads what it shows, not the partitions: 10,000 partitions of 100
// messages pushed at the same instant (PostgreSQL's worst case for ties).
func TestPageReadsLittle(t *testing.T) {
	parts := make([][]msg, 10000)
	for p := range parts {
		for s := range 100 {
			parts[p] = append(parts[p], msg{part: p, key: Key{Time: 7, Part: int64(p), Seq: int64(s + 1)}})
		}
	}
	src := newMemSource(parts)
	got, err := Page(src, 0, 50)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 50 || got[0].part != 9999 {
		t.Fatalf("first page: %d messages, first of partition %d", len(got), got[0].part)
	}
	if src.rows > 100 || src.reads > 2 {
		t.Errorf("first page read %d rows in %d reads", src.rows, src.reads)
	}
	// One message per partition, newest partitions last pushed.
	parts = make([][]msg, 10000)
	for p := range parts {
		parts[p] = []msg{{part: p, key: Key{Time: int64(p), Seq: int64(p + 1)}}}
	}
	src = newMemSource(parts)
	if got, err = Page(src, 100, 50); err != nil || len(got) != 50 || got[0].part != 9899 {
		t.Fatalf("page 3: %v, %d messages", err, len(got))
	}
	if src.rows > 400 {
		t.Errorf("page 3 of single-message partitions read %d rows", src.rows)
	}
}
