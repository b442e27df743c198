package bench

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/queen-go/queen/api"
)

// TestPushBodyIsAPushRequest: the hand-written push body is exactly an
// api.PushRequest (no key the wire type lacks), with the items the run
// expects.
func TestPushBodyIsAPushRequest(t *testing.T) {
	b := newPushBodyBuilder(`bench "q"`, "run1", 4, 120)
	body := b.build(nil, 3, 10, 2, 42)
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var req api.PushRequest
	if err := dec.Decode(&req); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	if len(req.Items) != 2 {
		t.Fatalf("%d items", len(req.Items))
	}
	for i, it := range req.Items {
		var pl payload
		if err := json.Unmarshal(it.Payload, &pl); err != nil || it.Queue != `bench "q"` ||
			it.Partition != PartitionName(PartitionFor(3, int64(10+i), 4)) || pl.Seq != int64(10+i) || pl.Producer != 3 ||
			pl.Run != "run1" || pl.SentAt != 42 || len(it.Payload) != 120 {
			t.Errorf("item %d: %+v (payload %s, %v)", i, it, it.Payload, err)
		}
	}
}
