package statsql

import (
	"testing"

	"github.com/queen-go/queen/internal/store"
)

func TestRankGauges(t *testing.T) {
	g := func(id int64, tenant, queue string, pending, dead int64) GaugeRow {
		return GaugeRow{ID: id, QueueGauge: store.QueueGauge{Tenant: tenant, Queue: queue, Pending: pending,
			DeadLetter: dead}}
	}
	all := []GaugeRow{g(1, "t", "b", 5, 1), g(2, "t", "a", 5, 0), g(3, "s", "z", 5, 0), g(4, "t", "c", 9, 2),
		g(5, "t", "d", 0, 4)}
	var out store.QueueGauges
	top := RankGauges(&out, all, 3)
	var ids []int64
	for _, r := range top {
		ids = append(ids, r.ID)
	}
	if len(ids) != 3 || ids[0] != 4 || ids[1] != 3 || ids[2] != 2 {
		t.Errorf("deepest: %v, want [4 3 2] (most pending, then tenant, then queue)", ids)
	}
	if out.Total != 5 || out.Pending != 24 || out.DeadLetter != 7 {
		t.Errorf("totals %+v, want over all five queues", out)
	}
	if len(RankGauges(&store.QueueGauges{}, nil, 3)) != 0 {
		t.Error("no queues: a non-empty top")
	}
}
