package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/queen-go/queen/api"
)

// SoakConfig is the soak scenario (`queen bench soak`): a steady push, pop
// and ack load on a queue with retention on, for a long time, sampling the
// broker's throughput and memory, so that the end of the run can be
// compared with its start.
type SoakConfig struct {
	Run Config // the load; Duration is the soak's length, Rate its steady push rate
	// Every is how often the broker's counters and memory are sampled.
	Every time.Duration
	// Window is the length of the first and last windows compared; 0 means
	// a minute, or a quarter of the run when that is shorter.
	Window time.Duration
	// CompletedRetention is the queue's completedRetentionSeconds: consumed
	// messages older than this are deleted by the broker's retention
	// service (which runs every RETENTION_INTERVAL of the broker: give it a
	// short one for a soak).
	CompletedRetention time.Duration
}

// SoakSample is one reading of the broker.
type SoakSample struct {
	Seconds  float64 `json:"seconds"` // since the start
	Pushed   float64 `json:"pushed"`  // queen_messages_pushed_total
	Popped   float64 `json:"popped"`  // queen_messages_popped_total
	RSSBytes float64 `json:"rss_bytes"`
	Heap     float64 `json:"heap_bytes"` // go_memstats_heap_inuse_bytes
}

// SoakWindow is the broker's throughput over a window of the run.
type SoakWindow struct {
	FromSec      float64 `json:"from_sec"`
	ToSec        float64 `json:"to_sec"`
	PushPerSec   float64 `json:"push_per_sec"`
	PopPerSec    float64 `json:"pop_per_sec"`
	RSSBytesLast float64 `json:"rss_bytes_last"`
}

// SoakReport is the outcome of `queen bench soak`; also its -json output.
type SoakReport struct {
	Run     *Report      `json:"run"`
	Samples []SoakSample `json:"samples"`
	First   SoakWindow   `json:"first"`
	Last    SoakWindow   `json:"last"`
	// ThroughputChange is the last window's pop rate relative to the
	// first's, in percent (0: equal; -10: 10 % slower).
	ThroughputChange float64 `json:"throughput_change_percent"`
	// RSSGrowth is the last window's RSS relative to the first's, in
	// percent.
	RSSGrowth float64 `json:"rss_growth_percent"`
}

// RunSoak configures the queue with retention, runs the load while sampling
// the broker, and compares the first window with the last.
func RunSoak(ctx context.Context, cfg SoakConfig) (*SoakReport, error) {
	rc := cfg.Run
	rc.setDefaults()
	if cfg.Every <= 0 {
		cfg.Every = 5 * time.Second
	}
	if cfg.Window <= 0 {
		cfg.Window = min(time.Minute, rc.Duration/4)
	}
	if cfg.CompletedRetention <= 0 {
		cfg.CompletedRetention = 10 * time.Second
	}
	if rc.Queue == "" {
		rc.Queue = "bench-soak-" + time.Now().UTC().Format("20060102-150405") + "-" + newRunID()
	}
	c, err := newClient(rc.URL, rc.Token, 4, nil)
	if err != nil {
		return nil, err
	}
	opts := api.DefaultQueueOptions()
	opts.RetentionEnabled, opts.CompletedRetentionSeconds = true, int(cfg.CompletedRetention.Seconds())
	body, _ := json.Marshal(api.ConfigureRequest{Queue: rc.Queue, Options: &opts})
	status, resp, err := c.do(ctx, http.MethodPost, "/api/v1/configure", body)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK && status != http.StatusCreated {
		return nil, fmt.Errorf("configure %s: HTTP %d: %s", rc.Queue, status, strings.TrimSpace(string(resp)))
	}

	start := time.Now()
	var (
		mu      sync.Mutex
		samples []SoakSample
	)
	sample := func() {
		m, err := scrape(ctx, c)
		if err != nil {
			return
		}
		mu.Lock()
		samples = append(samples, SoakSample{Seconds: time.Since(start).Seconds(),
			Pushed: m.get("queen_messages_pushed_total"), Popped: m.get("queen_messages_popped_total"),
			RSSBytes: m.get("process_resident_memory_bytes"), Heap: m.get("go_memstats_heap_inuse_bytes")})
		mu.Unlock()
	}
	sctx, stopSampling := context.WithCancel(ctx)
	var sampler sync.WaitGroup
	sampler.Go(func() {
		sample()
		tick := time.NewTicker(cfg.Every)
		defer tick.Stop()
		for {
			select {
			case <-sctx.Done():
				return
			case <-tick.C:
				sample()
			}
		}
	})
	rep, err := Run(ctx, rc)
	stopSampling()
	sampler.Wait()
	if err != nil {
		return nil, err
	}
	out := &SoakReport{Run: rep, Samples: samples}
	// Windows end with the push phase: the drain after it has nothing to
	// push.
	end := rep.Push.Seconds
	out.First = window(samples, 0, cfg.Window.Seconds())
	out.Last = window(samples, end-cfg.Window.Seconds(), end)
	if out.First.PopPerSec > 0 {
		out.ThroughputChange = 100 * (out.Last.PopPerSec/out.First.PopPerSec - 1)
	}
	if out.First.RSSBytesLast > 0 {
		out.RSSGrowth = 100 * (out.Last.RSSBytesLast/out.First.RSSBytesLast - 1)
	}
	return out, nil
}

// window returns the rates between the samples nearest from and to.
func window(s []SoakSample, from, to float64) SoakWindow {
	if len(s) < 2 {
		return SoakWindow{}
	}
	near := func(t float64) SoakSample {
		best := s[0]
		for _, x := range s {
			if abs(x.Seconds-t) < abs(best.Seconds-t) {
				best = x
			}
		}
		return best
	}
	a, b := near(max(from, 0)), near(to)
	w := SoakWindow{FromSec: a.Seconds, ToSec: b.Seconds, RSSBytesLast: b.RSSBytes}
	if d := b.Seconds - a.Seconds; d > 0 {
		w.PushPerSec, w.PopPerSec = (b.Pushed-a.Pushed)/d, (b.Popped-a.Popped)/d
	}
	return w
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

func printSoak(w io.Writer, r *SoakReport) {
	printReport(w, r.Run)
	pr := func(name string, x SoakWindow) {
		fmt.Fprintf(w, "%-8s %5.0f–%5.0fs: push %.0f msg/s, pop %.0f msg/s, RSS %.1f MB\n",
			name, x.FromSec, x.ToSec, x.PushPerSec, x.PopPerSec, x.RSSBytesLast/1e6)
	}
	pr("first", r.First)
	pr("last", r.Last)
	fmt.Fprintf(w, "soak     last window vs first: pop rate %+.1f %%, RSS %+.1f %%\n", r.ThroughputChange, r.RSSGrowth)
	fmt.Fprint(w, "rss      ")
	for i, s := range r.Samples {
		if i > 0 {
			fmt.Fprint(w, " ")
		}
		fmt.Fprintf(w, "%.0fs:%.0fMB", s.Seconds, s.RSSBytes/1e6)
	}
	fmt.Fprintln(w)
}
