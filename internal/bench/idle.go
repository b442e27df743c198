package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/api"
)

// IdleConfig is the parked-polls scenario (`queen bench idle`): Polls long
// polls parked over Queues queues cost the broker what, while nothing is
// pushed, and how fast does a push wake one of them.
type IdleConfig struct {
	URL   string
	Token string
	// DB, when set (postgres://…), is the broker's database: the report then
	// counts its committed transactions during the idle window
	// (pg_stat_database, so anything else using the database counts too).
	DB string

	Polls       int           // parked long polls
	Queues      int           // spread evenly over this many queues
	Groups      int           // 0: queue mode; N: the polls of each queue split over N consumer groups
	Observe     time.Duration // idle window
	Wakes       int           // wake-up rounds after the window: one message pushed, one poll answers
	PollTimeout time.Duration // long-poll timeout sent to the broker

	Progress   io.Writer
	HTTPClient *http.Client
}

// IdleReport is the outcome of `queen bench idle`; also its -json output.
type IdleReport struct {
	URL    string `json:"url"`
	Engine string `json:"engine,omitempty"`
	Polls  int    `json:"polls"`
	Queues int    `json:"queues"`
	Groups int    `json:"groups"`
	// ParkSeconds is how long the polls took to be all parked.
	ParkSeconds float64    `json:"park_seconds"`
	Idle        IdleWindow `json:"idle"`
	// Wake is the time from a push's response to the response of the
	// parked poll it woke; WakeFromSend from the push's request instead.
	Wake         LatencySummary `json:"wake"`
	WakeFromSend LatencySummary `json:"wake_from_send"`
	// WokenPerPush is how many polls each one-message push woke (from the
	// broker's queen_pop_wakeups_total; -1 when the broker does not export
	// it). 1 per consumer group is ideal; the number of parked polls of the
	// queue means every poll was woken.
	WokenPerPush float64          `json:"woken_per_push"`
	Errors       map[string]int64 `json:"errors"`
}

// IdleWindow is what the broker spent while nothing was pushed. Values the
// broker does not export are -1.
type IdleWindow struct {
	Seconds float64 `json:"seconds"`
	// CPUPercent is the broker's CPU time over the window, in percent of
	// one core (process_cpu_seconds_total).
	CPUPercent float64 `json:"cpu_percent"`
	// RSSBytes is the broker's resident memory at the end of the window,
	// of which HeapBytes Go heap in use (live objects and garbage not
	// collected yet) and StackBytes goroutine stacks.
	RSSBytes   float64 `json:"rss_bytes"`
	HeapBytes  float64 `json:"heap_bytes"`
	StackBytes float64 `json:"stack_bytes"`
	// RechecksPerSec counts store looks by parked polls
	// (queen_pop_rechecks_total).
	RechecksPerSec float64 `json:"rechecks_per_sec"`
	// DBXactsPerSec counts transactions committed in the broker's database
	// (with -db; -1 without).
	DBXactsPerSec float64 `json:"db_xacts_per_sec"`
}

// IdleMain runs `queen bench idle` with args.
func IdleMain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("queen bench idle", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: queen bench idle [flags]

Parks -polls long polls over -queues queues, measures for -observe what the
broker spends while nothing is pushed (CPU, memory, store looks, database
transactions with -db), then pushes one message at a time -wakes times and
measures how fast the parked poll it wakes answers.

Flags:
`)
		fs.PrintDefaults()
	}
	var cfg IdleConfig
	fs.StringVar(&cfg.URL, "url", "http://localhost:6632", "broker base URL")
	fs.StringVar(&cfg.Token, "token", "", "bearer token sent on every request")
	fs.StringVar(&cfg.DB, "db", "", "the broker's PostgreSQL database, to count its transactions while idle")
	fs.IntVar(&cfg.Polls, "polls", 1000, "parked long polls")
	fs.IntVar(&cfg.Queues, "queues", 10, "queues the polls are spread over")
	fs.IntVar(&cfg.Groups, "groups", 0, "consumer groups per queue (0: queue mode)")
	fs.DurationVar(&cfg.Observe, "observe", 5*time.Second, "idle window")
	fs.IntVar(&cfg.Wakes, "wakes", 200, "wake-up rounds (one message each)")
	fs.DurationVar(&cfg.PollTimeout, "poll-timeout", 60*time.Second, "long-poll timeout sent to the broker")
	jsonOut := fs.Bool("json", false, "print the report as JSON on stdout")
	quiet := fs.Bool("quiet", false, "no progress lines")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if !*quiet {
		cfg.Progress = stderr
	}
	rep, err := RunIdle(ctx, cfg)
	if err != nil {
		return err
	}
	if *jsonOut {
		return writeJSON(stdout, rep)
	}
	printIdle(stdout, rep)
	return nil
}

func printIdle(w io.Writer, r *IdleReport) {
	na := func(v float64, format string) string {
		if v < 0 {
			return "n/a"
		}
		return fmt.Sprintf(format, v)
	}
	fmt.Fprintf(w, "broker   %s (%s)\n", r.URL, r.Engine)
	fmt.Fprintf(w, "scenario %d parked polls over %d queues, %d groups; all parked in %.1fs\n",
		r.Polls, r.Queues, r.Groups, r.ParkSeconds)
	i := r.Idle
	fmt.Fprintf(w, "idle     %.1fs: CPU %s of a core, RSS %s MB (heap %s MB, stacks %s MB), store looks %s/s, database transactions %s/s\n",
		i.Seconds, na(i.CPUPercent, "%.2f %%"), na(i.RSSBytes/1e6, "%.1f"), na(i.HeapBytes/1e6, "%.1f"),
		na(i.StackBytes/1e6, "%.1f"), na(i.RechecksPerSec, "%.1f"), na(i.DBXactsPerSec, "%.1f"))
	printLatency(w, "wake", r.Wake)
	printLatency(w, "  (send)", r.WakeFromSend)
	fmt.Fprintf(w, "woken    %s polls per one-message push\n", na(r.WokenPerPush, "%.2f"))
	if len(r.Errors) > 0 {
		fmt.Fprintf(w, "errors   %s\n", summarizeCounts(r.Errors))
	}
}

// RunIdle runs the parked-polls scenario.
func RunIdle(ctx context.Context, cfg IdleConfig) (*IdleReport, error) {
	if cfg.Polls < 1 || cfg.Queues < 1 || cfg.Groups < 0 || cfg.Wakes < 0 {
		return nil, errors.New("need at least one poll and one queue")
	}
	if cfg.PollTimeout <= 0 {
		cfg.PollTimeout = time.Minute
	}
	c, err := newClient(cfg.URL, cfg.Token, cfg.Polls+8, cfg.HTTPClient)
	if err != nil {
		return nil, err
	}
	rep := &IdleReport{URL: c.base, Polls: cfg.Polls, Queues: cfg.Queues, Groups: cfg.Groups, WokenPerPush: -1}
	engine, err := c.health(ctx)
	if err != nil {
		return nil, err
	}
	rep.Engine = engine
	run := newRunID()
	queues := make([]string, cfg.Queues)
	groups := []string{""}
	if cfg.Groups > 0 {
		groups = groups[:0]
		for g := range cfg.Groups {
			groups = append(groups, fmt.Sprintf("idle-g%d", g))
		}
	}
	// The queues exist and are empty: one message each, consumed by every
	// group.
	for i := range queues {
		queues[i] = fmt.Sprintf("bench-idle-%s-%d", run, i)
		if err := idlePush(ctx, c, queues[i], -1); err != nil {
			return nil, err
		}
		for _, g := range groups {
			if _, _, err := c.do(ctx, http.MethodGet, idlePopPath(queues[i], g, 0, true), nil); err != nil {
				return nil, err
			}
		}
	}
	defer func() {
		for _, q := range queues {
			_ = c.deleteQueue(context.WithoutCancel(ctx), q)
		}
	}()

	var errs errorCounts
	answers := make(chan idleAnswer, cfg.Polls)
	pctx, stopPolls := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		stopPolls()
		wg.Wait()
	}()
	for i := range cfg.Polls {
		q := queues[i%cfg.Queues]
		g := groups[(i/cfg.Queues)%len(groups)]
		path := idlePopPath(q, g, cfg.PollTimeout, false)
		wg.Go(func() { idlePoll(pctx, c, path, answers, &errs) })
	}
	start := time.Now()
	if err := waitParked(ctx, c, float64(cfg.Polls), time.Minute, cfg.Progress); err != nil {
		return nil, err
	}
	rep.ParkSeconds = time.Since(start).Seconds()

	// The idle window.
	before, err := scrape(ctx, c)
	if err != nil {
		return nil, err
	}
	xacts := func() float64 { return -1 }
	if cfg.DB != "" {
		conn, err := pgx.Connect(ctx, cfg.DB)
		if err != nil {
			return nil, fmt.Errorf("-db: %w", err)
		}
		defer conn.Close(context.WithoutCancel(ctx))
		xacts = func() float64 {
			var n int64
			// A fresh snapshot of the cumulative statistics each time.
			if _, err := conn.Exec(ctx, "SELECT pg_stat_clear_snapshot()"); err != nil {
				return -1
			}
			if err := conn.QueryRow(ctx, `SELECT xact_commit FROM pg_stat_database
				WHERE datname = current_database()`).Scan(&n); err != nil {
				return -1
			}
			return float64(n)
		}
	}
	x0 := xacts()
	t0 := time.Now()
	select {
	case <-time.After(cfg.Observe):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	after, err := scrape(ctx, c)
	if err != nil {
		return nil, err
	}
	secs := time.Since(t0).Seconds()
	x1 := xacts()
	rep.Idle = IdleWindow{Seconds: secs, CPUPercent: -1, RSSBytes: after.get("process_resident_memory_bytes"),
		HeapBytes: after.get("go_memstats_heap_inuse_bytes"), StackBytes: after.get("go_memstats_stack_inuse_bytes"),
		RechecksPerSec: -1, DBXactsPerSec: -1}
	if a, b := after.get("process_cpu_seconds_total"), before.get("process_cpu_seconds_total"); a >= 0 && b >= 0 {
		rep.Idle.CPUPercent = 100 * (a - b) / secs
	}
	if a, b := after.get("queen_pop_rechecks_total"), before.get("queen_pop_rechecks_total"); a >= 0 && b >= 0 {
		rep.Idle.RechecksPerSec = (a - b) / secs
	}
	if x0 >= 0 && x1 >= 0 {
		// Our own two snapshots are transactions too.
		rep.Idle.DBXactsPerSec = math.Max(0, x1-x0-2) / secs
	}
	select {
	case a := <-answers:
		errs.add("a poll answered while nothing was pushed: " + a.queue)
	default:
	}

	// Wake-ups: one message at a time, with every poll parked.
	var wake, fromSend Histogram
	w0 := after.sum("queen_pop_wakeups_total")
	for i := range cfg.Wakes {
		if err := waitParked(ctx, c, float64(cfg.Polls), 30*time.Second, nil); err != nil {
			return nil, err
		}
		q := queues[i%cfg.Queues]
		sent := time.Now()
		if err := idlePush(ctx, c, q, i); err != nil {
			return nil, err
		}
		answered := time.Now()
		got := 0
		for got < len(groups) {
			select {
			case a := <-answers:
				if a.round != i {
					errs.add("a poll answered with another round's message")
					continue
				}
				got++
				wake.RecordDuration(a.at.Sub(answered))
				fromSend.RecordDuration(a.at.Sub(sent))
			case <-time.After(10 * time.Second):
				return nil, fmt.Errorf("round %d: no poll of %s answered within 10s of the push", i, q)
			}
		}
	}
	if cfg.Wakes > 0 {
		end, err := scrape(ctx, c)
		if err != nil {
			return nil, err
		}
		// A labelled family without samples is not exported at all: a
		// broker exporting queen_pop_rechecks_total has it, at 0.
		if w1 := end.sum("queen_pop_wakeups_total"); end.get("queen_pop_rechecks_total") >= 0 {
			rep.WokenPerPush = (max(w1, 0) - max(w0, 0)) / float64(cfg.Wakes)
		}
	}
	rep.Wake, rep.WakeFromSend = wake.Summary(), fromSend.Summary()
	rep.Errors = errs.snapshot()
	return rep, nil
}

// idleAnswer is a parked poll's non-empty answer.
type idleAnswer struct {
	queue string
	round int
	at    time.Time
}

func idlePopPath(queue, group string, timeout time.Duration, autoAckNow bool) string {
	v := url.Values{}
	v.Set("autoAck", "true")
	if !autoAckNow {
		v.Set("wait", "true")
		v.Set("timeout", strconv.FormatInt(timeout.Milliseconds(), 10))
	}
	if group != "" {
		v.Set("consumerGroup", group)
	}
	return "/api/v1/pop/queue/" + url.PathEscape(queue) + "?" + v.Encode()
}

// idlePoll long-polls path until ctx ends, reporting every message.
func idlePoll(ctx context.Context, c *client, path string, answers chan<- idleAnswer, errs *errorCounts) {
	for ctx.Err() == nil {
		status, body, err := c.do(ctx, http.MethodGet, path, nil)
		at := time.Now()
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			errs.add("pop: " + shortErr(err))
			time.Sleep(100 * time.Millisecond)
		case status == http.StatusNoContent:
		case status != http.StatusOK:
			errs.add(fmt.Sprintf("pop: HTTP %d", status))
			time.Sleep(100 * time.Millisecond)
		default:
			var resp api.PopResponse
			if err := json.Unmarshal(body, &resp); err != nil {
				errs.add("pop: bad JSON")
				continue
			}
			for _, m := range resp.Messages {
				var d struct {
					W int `json:"w"`
				}
				_ = json.Unmarshal(m.Data, &d)
				answers <- idleAnswer{queue: path, round: d.W, at: at}
			}
		}
	}
}

// idlePush pushes one message carrying round to queue.
func idlePush(ctx context.Context, c *client, queue string, round int) error {
	payload, _ := json.Marshal(map[string]int{"w": round})
	body, _ := json.Marshal(api.PushRequest{Items: []api.PushItem{{Queue: queue, Payload: payload}}})
	status, resp, err := c.do(ctx, http.MethodPost, "/api/v1/push", body)
	if err != nil {
		return err
	}
	if status != http.StatusCreated {
		return fmt.Errorf("push: HTTP %d: %s", status, bytes.TrimSpace(resp))
	}
	return nil
}

// waitParked waits until the broker's queen_pop_waiting gauge reaches n.
func waitParked(ctx context.Context, c *client, n float64, timeout time.Duration, progress io.Writer) error {
	deadline := time.Now().Add(timeout)
	last := time.Now()
	for {
		m, err := scrape(ctx, c)
		if err != nil {
			return err
		}
		got := m.get("queen_pop_waiting")
		if got >= n {
			return nil
		}
		if progress != nil && time.Since(last) > time.Second {
			fmt.Fprintf(progress, "%.0f of %.0f polls parked\n", got, n)
			last = time.Now()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %.0f of %.0f polls parked after %v", got, n, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// samples are the lines of a /metrics/prometheus answer: sample name with
// labels → value.
type samples map[string]float64

// scrape reads the broker's metrics.
func scrape(ctx context.Context, c *client) (samples, error) {
	status, body, err := c.do(ctx, http.MethodGet, "/metrics/prometheus", nil)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("metrics: HTTP %d", status)
	}
	out := samples{}
	for line := range strings.SplitSeq(string(body), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out, nil
}

// get returns the unlabelled sample name, -1 if absent.
func (s samples) get(name string) float64 {
	if v, ok := s[name]; ok {
		return v
	}
	return -1
}

// sum adds every sample of name whatever its labels; -1 if there is none.
func (s samples) sum(name string) float64 {
	total, found := 0.0, false
	for k, v := range s {
		if k == name || strings.HasPrefix(k, name+"{") {
			total += v
			found = true
		}
	}
	if !found {
		return -1
	}
	return total
}
