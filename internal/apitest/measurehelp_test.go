package apitest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/internal/store"
)

// What the measurements of the control plane and the status routes do
// alike: fill a big queue, and time a table of routes.

// fillHalves fills queue q of st with perPart messages in each of
// partitions partitions, the first half of each created at older and the
// rest at newer, in batches of whole partitions of about 5,000 messages.
// It returns the payload every message has.
func fillHalves(t *testing.T, st store.Store, q string, partitions, perPart int, older, newer time.Time) []byte {
	t.Helper()
	ctx := context.Background()
	half := perPart / 2
	chunk := max(5000/max(half, 1), 1)
	payload := []byte(`{"orderId":12345,"status":"created","amount":99.5}`)
	for _, phase := range []struct {
		at time.Time
		n  int
	}{{older, half}, {newer, perPart - half}} {
		for first := 0; first < partitions; first += chunk {
			var items []store.PushItem
			for p := first; p < min(first+chunk, partitions); p++ {
				for range phase.n {
					items = append(items, store.PushItem{MessageID: uuid.Must(uuid.NewV7()).String(),
						TransactionID: uuid.Must(uuid.NewV7()).String(), Queue: q, Namespace: "bench",
						Task: "fill", Partition: fmt.Sprintf("p%05d", p), Payload: payload})
				}
			}
			if _, err := st.MessagePushMany(ctx, &store.MessagePushManyParams{Items: items, Now: phase.at}); err != nil {
				t.Fatalf("fill: %v", err)
			}
		}
	}
	return payload
}

// timedRoute is a request a measurement times rounds times.
type timedRoute struct {
	name, method, path string
	body               any
	rounds             int
}

// timeRoutes sends each route's request rounds+1 times (the first warms
// caches, unless rounds is 1), fails on an answer that is not a 2xx, and
// writes the route's p50 and p95 to report.
func timeRoutes(t *testing.T, c *client, routes []timedRoute, report *strings.Builder) {
	t.Helper()
	for _, rt := range routes {
		var lats []time.Duration
		for i := range rt.rounds + 1 {
			start := time.Now()
			r := c.do(t, rt.method, rt.path, rt.body)
			d := time.Since(start)
			if r.Status/100 != 2 {
				t.Fatalf("%s: %v", rt.name, r)
			}
			if i > 0 || rt.rounds == 1 {
				lats = append(lats, d)
			}
		}
		slices.Sort(lats)
		p50, p95 := lats[len(lats)/2], lats[min(len(lats)-1, len(lats)*95/100)]
		fmt.Fprintf(report, "%-48s %10v %10v\n", rt.method+" "+rt.name, p50.Round(10*time.Microsecond),
			p95.Round(10*time.Microsecond))
	}
}
