package delivery_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/ingress"
	"github.com/queen-go/queen/internal/server"
	"github.com/queen-go/queen/internal/testbroker"
)

// TestMeasure measures, on each engine, deliveries per second to a local
// receiver, ingress requests per second (API key and signed) and the
// latency from an ingress request to the receiver. It runs only with
// QUEEN_DELIVERY_MEASURE=1 (timing does not belong in the suite).
func TestMeasure(t *testing.T) {
	if os.Getenv("QUEEN_DELIVERY_MEASURE") == "" {
		t.Skip("QUEEN_DELIVERY_MEASURE not set")
	}
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			open := e.open(t)
			cfg := fastConfig()
			cfg.Workers, cfg.Batch, cfg.PollWait = 16, 50, time.Second
			nd := startNode(t, open(t), cfg)
			const n, partitions = 20000, 16
			var got atomic.Int64
			rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got.Add(1) }))
			defer rcv.Close()
			if _, err := nd.svc.Create(context.Background(), "", &api.DeliveryTarget{Queue: "m", URL: rcv.URL,
				Sign: true}); err != nil {
				t.Fatal(err)
			}
			pushAll(t, nd.b, "m", n, partitions)
			start := time.Now()
			waitFor(t, 5*time.Minute, "all delivered", func() bool { return nd.ack.count() == n })
			el := time.Since(start)
			t.Logf("%s delivery: %d signed messages on %d partitions in %s: %.0f msg/s", e.name, n, partitions,
				el.Round(time.Millisecond), float64(n)/el.Seconds())
		})
		t.Run(e.name+"/ingress", func(t *testing.T) {
			st := e.open(t)(t)
			dcfg := fastConfig()
			dcfg.Workers = 4
			base := testbroker.Serve(t, server.Config{Delivery: dcfg}, st)
			key := openQueue(t, base, "k", nil)
			openQueue(t, base, "s", map[string]any{"auth": "hmac"})
			_, sec := call(t, "POST", base+"/api/v1/ingress/queues/s/secrets", nil)
			keyID, secret := sec["keyId"].(string), sec["secret"].(string)
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
			run := func(name, queue string, sign bool) {
				const workers, dur = 8, 3 * time.Second
				var count atomic.Int64
				var wg sync.WaitGroup
				stop := time.Now().Add(dur)
				for range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for time.Now().Before(stop) {
							body := []byte(`{"amount":100}`)
							req, _ := http.NewRequest("POST", base+"/ingress/v1/"+queue, bytes.NewReader(body))
							if sign {
								ingress.SignRequest(req, body, keyID, secret, time.Now().Unix(), uuid.NewString())
							} else {
								req.Header.Set("X-Api-Key", key)
							}
							resp, err := client.Do(req)
							if err != nil {
								t.Error(err)
								return
							}
							resp.Body.Close()
							if resp.StatusCode != 202 {
								t.Errorf("ingress: %d", resp.StatusCode)
								return
							}
							count.Add(1)
						}
					}()
				}
				wg.Wait()
				t.Logf("%s ingress (%s): %.0f requests/s (%d clients)", e.name, name, float64(count.Load())/dur.Seconds(),
					workers)
			}
			run("API key", "k", false)
			run("HMAC", "s", true)

			// Latency: one event every 5 ms, ingress to receiver.
			var mu sync.Mutex
			var lat []time.Duration
			rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var ev struct {
					At string `json:"at"`
				}
				_ = json.NewDecoder(r.Body).Decode(&ev)
				ns, _ := strconv.ParseInt(ev.At, 10, 64)
				mu.Lock()
				lat = append(lat, time.Since(time.Unix(0, ns)))
				mu.Unlock()
			}))
			defer rcv.Close()
			lkey := openQueue(t, base, "lat", map[string]any{"partitionField": "p"})
			createTarget(t, base, map[string]any{"queue": "lat", "url": rcv.URL})
			time.Sleep(300 * time.Millisecond) // the target's workers start
			const events = 400
			for i := range events {
				body := fmt.Sprintf(`{"at":"%d","p":"p%d"}`, time.Now().UnixNano(), i%8)
				if code, out := call(t, "POST", base+"/ingress/v1/lat", body, "X-Api-Key", lkey); code != 202 {
					t.Fatalf("%d %v", code, out)
				}
				time.Sleep(5 * time.Millisecond)
			}
			waitFor(t, time.Minute, "latency events", func() bool { mu.Lock(); defer mu.Unlock(); return len(lat) >= events })
			mu.Lock()
			slices.Sort(lat)
			t.Logf("%s ingress→receiver latency over %d events: p50 %s, p99 %s", e.name, len(lat),
				lat[len(lat)/2].Round(10*time.Microsecond), lat[len(lat)*99/100].Round(10*time.Microsecond))
			mu.Unlock()
		})
	}
}
