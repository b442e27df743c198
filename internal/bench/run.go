package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	fastjson "github.com/segmentio/encoding/json"

	"github.com/queen-go/queen/api"
)

// Ack modes.
const (
	AckBatch = "batch" // one /ack/batch per popped batch
	AckAuto  = "auto"  // pop with autoAck=true
	AckTx    = "tx"    // one /transaction per batch: ack it and push one message on
)

// queueModeGroup is the consumer group of queue mode.
const queueModeGroup = "__QUEUE_MODE__"

// Config is one broker scenario.
type Config struct {
	URL   string // broker base URL
	Queue string // queue name; "" means a fresh unique name
	// Token is sent as "Authorization: Bearer <token>" on every request;
	// "" sends none.
	Token string

	Producers int
	Consumers int           // per consumer group
	Messages  int64         // total across producers; 0 means run for Duration
	Duration  time.Duration // producing time when Messages is 0
	// Rate caps the total push rate in messages/s (0: as fast as possible).
	// A capped rate keeps consumers ahead of producers, so end-to-end
	// latency measures delivery (long-poll wake-up) rather than backlog.
	Rate float64

	PushBatch     int
	PopBatch      int
	PopPartitions int // lanes one pop may claim (the pop "partitions" parameter)
	PayloadBytes  int
	Partitions    int
	Groups        int // 0: queue mode; N: N consumer groups that each get every message

	LongPoll     bool
	PollTimeout  time.Duration // long-poll timeout sent to the broker
	PollInterval time.Duration // pause after an empty pop when not long-polling
	Ack          string

	// Drain starts the consumers only after the producers finished, to
	// measure draining a full queue rather than keeping up with producers.
	Drain bool
	// DrainTimeout ends consumption when no new message arrived for this
	// long after the producers finished.
	DrainTimeout time.Duration
	// KeepQueue leaves the queue (and the tx mode's forward queue) in place.
	KeepQueue bool

	// Progress receives a line every second; nil for none.
	Progress io.Writer
	// HTTPClient overrides the client built from the worker counts.
	HTTPClient *http.Client
}

func (c *Config) setDefaults() {
	if c.URL == "" {
		c.URL = "http://localhost:6632"
	}
	c.URL = strings.TrimRight(c.URL, "/")
	if c.Messages == 0 && c.Duration == 0 {
		c.Duration = 10 * time.Second
	}
	c.PushBatch = max(c.PushBatch, 1)
	c.PopBatch = max(c.PopBatch, 1)
	c.PopPartitions = max(c.PopPartitions, 1)
	c.Partitions = max(c.Partitions, 1)
	if c.Ack == "" {
		c.Ack = AckBatch
	}
	if c.PollTimeout <= 0 {
		c.PollTimeout = 2 * time.Second
	}
	if c.PollInterval <= 0 {
		c.PollInterval = 10 * time.Millisecond
	}
	if c.DrainTimeout <= 0 {
		c.DrainTimeout = 15 * time.Second
	}
}

func (c *Config) validate() error {
	switch {
	case c.Producers < 1:
		return errors.New("need at least one producer")
	case c.Consumers < 0 || c.Groups < 0 || c.Messages < 0 || c.Duration < 0 || c.Rate < 0:
		return errors.New("counts and durations must not be negative")
	case c.Ack != AckBatch && c.Ack != AckAuto && c.Ack != AckTx:
		return fmt.Errorf("unknown ack mode %q (want batch, auto or tx)", c.Ack)
	case c.PushBatch > 10000 || c.PopBatch > 10000:
		return errors.New("batches are capped at 10000")
	}
	return nil
}

// groupNames returns the consumer groups the run reads with.
func (c *Config) groupNames() []string {
	if c.Groups == 0 {
		return []string{queueModeGroup}
	}
	names := make([]string, c.Groups)
	for i := range names {
		names[i] = fmt.Sprintf("bench-g%d", i)
	}
	return names
}

// Report is the outcome of a run; it is also the -json output.
type Report struct {
	URL      string    `json:"url"`
	Engine   string    `json:"engine,omitempty"`
	Queue    string    `json:"queue"`
	Settings Settings  `json:"settings"`
	Push     PushStats `json:"push"`
	Consume  *Consume  `json:"consume,omitempty"`
	// Errors counts failures by kind ("push: HTTP 500", "ack: invalid or
	// expired lease", …).
	Errors       map[string]int64 `json:"errors"`
	Verification Verification     `json:"verification"`
	Limit        *LimitResult     `json:"limit,omitempty"`
	// PushPercentOfLimit is push msg/s as a percentage of the limit's rows/s.
	PushPercentOfLimit float64 `json:"push_percent_of_limit,omitempty"`
	// ConsumePercentOfLimit is consume msg/s (all groups) as a percentage of
	// the limit's rows/s.
	ConsumePercentOfLimit float64 `json:"consume_percent_of_limit,omitempty"`
	// CopyLimit is the COPY limit when both modes were measured
	// (-limit-mode both); PushPercentOfCopyLimit the push against it.
	CopyLimit              *LimitResult `json:"copy_limit,omitempty"`
	PushPercentOfCopyLimit float64      `json:"push_percent_of_copy_limit,omitempty"`
}

// Settings echoes the scenario.
type Settings struct {
	Producers     int     `json:"producers"`
	Consumers     int     `json:"consumers_per_group"`
	Groups        int     `json:"groups"`
	Messages      int64   `json:"messages,omitempty"`
	Rate          float64 `json:"rate,omitempty"`
	DurationSec   float64 `json:"duration_s,omitempty"`
	PushBatch     int     `json:"push_batch"`
	PopBatch      int     `json:"pop_batch"`
	PopPartitions int     `json:"pop_partitions"`
	PayloadBytes  int     `json:"payload_bytes"`
	Partitions    int     `json:"partitions"`
	LongPoll      bool    `json:"long_poll"`
	Ack           string  `json:"ack"`
	Drain         bool    `json:"drain"`
}

// PushStats describes the producers' side.
type PushStats struct {
	Messages  int64          `json:"messages"` // confirmed stored
	Requests  int64          `json:"requests"`
	Seconds   float64        `json:"seconds"`
	MsgPerSec float64        `json:"msg_per_s"`
	MBPerSec  float64        `json:"mb_per_s"` // payload bytes, 10^6
	Latency   LatencySummary `json:"latency"`  // per push request
}

// Consume describes the consumers' side, summed over groups.
type Consume struct {
	Messages  int64          `json:"messages"` // deliveries, duplicates included
	Unique    int64          `json:"unique"`
	Seconds   float64        `json:"seconds"`
	MsgPerSec float64        `json:"msg_per_s"`
	Forwarded int64          `json:"forwarded,omitempty"` // tx mode: messages pushed on
	EndToEnd  LatencySummary `json:"end_to_end"`          // produce → consume
	TimedOut  bool           `json:"drain_timed_out,omitempty"`
}

// Verification is the verifier's verdict.
type Verification struct {
	Checked    bool             `json:"checked"`
	Violations map[string]int64 `json:"violations"`
	Details    []string         `json:"details,omitempty"`
}

// Failed reports whether any violation was found.
func (r *Report) Failed() bool {
	for _, n := range r.Verification.Violations {
		if n > 0 {
			return true
		}
	}
	return false
}

// errorCounts counts failures by kind.
type errorCounts struct {
	mu sync.Mutex
	m  map[string]int64
	n  atomic.Int64
}

func (e *errorCounts) add(kind string) {
	e.n.Add(1)
	e.mu.Lock()
	if e.m == nil {
		e.m = make(map[string]int64)
	}
	e.m[kind]++
	e.mu.Unlock()
}

func (e *errorCounts) snapshot() map[string]int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]int64, len(e.m))
	for k, v := range e.m {
		out[k] = v
	}
	return out
}

type runner struct {
	cfg    Config
	c      *client
	run    string // run id stamped in payloads and transaction ids
	groups []string
	ver    *Verifier
	errs   errorCounts

	pushed     atomic.Int64 // confirmed messages
	requests   atomic.Int64
	delivered  atomic.Int64 // deliveries over all groups, duplicates included
	forwarded  atomic.Int64
	lastRecvNs atomic.Int64 // Unix ns of the latest delivery

	producersDone atomic.Bool
	expected      atomic.Int64 // per group, known once producers are done
	groupCancel   []context.CancelFunc
}

// Run executes one scenario against cfg.URL and returns its report. The
// error is for failures to run at all; verification results are in the
// report (see Report.Failed).
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	run := newRunID()
	if cfg.Queue == "" {
		cfg.Queue = "bench-" + time.Now().UTC().Format("20060102-150405") + "-" + run
	}
	c, err := newClient(cfg.URL, cfg.Token, cfg.Producers+cfg.Consumers*max(cfg.Groups, 1)+4, cfg.HTTPClient)
	if err != nil {
		return nil, err
	}
	r := &runner{cfg: cfg, c: c, run: run, groups: cfg.groupNames()}
	// With autoAck the broker moves a lane on as soon as it answers, so two
	// consumers of a group may record a lane's batches in either order.
	acrossBatches := cfg.Ack != AckAuto || cfg.Consumers <= 1
	r.ver = NewVerifier(r.groups, cfg.Partitions, acrossBatches)

	hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	engine, err := r.c.health(hctx)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("broker at %s: %w", cfg.URL, err)
	}
	rep, err := r.execute(ctx)
	if err != nil {
		return nil, err
	}
	rep.Engine = engine
	if !cfg.KeepQueue {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 60*time.Second)
		for _, q := range r.queues() {
			if err := r.c.deleteQueue(dctx, q); err != nil {
				r.errs.add("cleanup: " + err.Error())
			}
		}
		cancel()
		rep.Errors = r.errs.snapshot()
	}
	return rep, nil
}

func (r *runner) queues() []string {
	if r.cfg.Ack == AckTx && r.cfg.Consumers > 0 {
		return []string{r.cfg.Queue, r.forwardQueue()}
	}
	return []string{r.cfg.Queue}
}

func (r *runner) forwardQueue() string { return r.cfg.Queue + "-out" }

func newRunID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (r *runner) execute(ctx context.Context) (*Report, error) {
	cfg := r.cfg
	ctx, stopAll := context.WithCancel(ctx)
	defer stopAll()

	// Consumers.
	consumerHists := make([]*Histogram, len(r.groups)*cfg.Consumers)
	var consumers sync.WaitGroup
	var consumeStart time.Time
	startConsumers := func() {
		consumeStart = time.Now()
		r.lastRecvNs.Store(consumeStart.UnixNano())
		// All cancel funcs exist before any consumer can call one.
		gctxs := make([]context.Context, len(r.groups))
		r.groupCancel = make([]context.CancelFunc, len(r.groups))
		for g := range r.groups {
			gctxs[g], r.groupCancel[g] = context.WithCancel(ctx)
		}
		for g := range r.groups {
			gctx := gctxs[g]
			for k := range cfg.Consumers {
				h := new(Histogram)
				consumerHists[g*cfg.Consumers+k] = h
				consumers.Add(1)
				go func() {
					defer consumers.Done()
					r.consume(gctx, g, h)
				}()
			}
		}
	}
	if cfg.Consumers > 0 && !cfg.Drain {
		startConsumers()
	}

	stopProgress := r.startProgress(ctx)
	defer stopProgress()

	// Producers.
	sent := make([]Sent, cfg.Producers)
	pushHists := make([]*Histogram, cfg.Producers)
	var producers sync.WaitGroup
	pushStart := time.Now()
	deadline := pushStart.Add(cfg.Duration)
	for p := range cfg.Producers {
		quota := int64(-1) // run until the deadline
		if cfg.Messages > 0 {
			quota = cfg.Messages / int64(cfg.Producers)
			if int64(p) < cfg.Messages%int64(cfg.Producers) {
				quota++
			}
		}
		pushHists[p] = new(Histogram)
		producers.Add(1)
		go func() {
			defer producers.Done()
			sent[p] = r.produce(ctx, p, quota, deadline, pushHists[p])
		}()
	}
	producers.Wait()
	pushElapsed := time.Since(pushStart)

	var expected int64
	for _, s := range sent {
		expected += s.Expected()
	}
	r.expected.Store(expected)
	r.producersDone.Store(true)

	// Consume until every group has everything or nothing arrives for
	// DrainTimeout.
	var timedOut bool
	if cfg.Consumers > 0 {
		if cfg.Drain {
			startConsumers()
		} else {
			r.lastRecvNs.Store(max(r.lastRecvNs.Load(), time.Now().UnixNano()))
		}
		tick := time.NewTicker(20 * time.Millisecond)
	wait:
		for {
			done := true
			for g := range r.groups {
				if r.ver.Unique(g) >= expected {
					r.groupCancel[g]()
				} else {
					done = false
				}
			}
			if done {
				break
			}
			select {
			case <-ctx.Done():
				break wait
			case <-tick.C:
			}
			if time.Since(time.Unix(0, r.lastRecvNs.Load())) > cfg.DrainTimeout {
				timedOut = true
				break
			}
		}
		tick.Stop()
		for _, cancel := range r.groupCancel {
			cancel()
		}
		consumers.Wait()
	}
	stopProgress()

	rep := &Report{
		URL:   cfg.URL,
		Queue: cfg.Queue,
		Settings: Settings{
			Producers: cfg.Producers, Consumers: cfg.Consumers, Groups: cfg.Groups, Messages: cfg.Messages, Rate: cfg.Rate,
			PushBatch: cfg.PushBatch, PopBatch: cfg.PopBatch, PopPartitions: cfg.PopPartitions,
			PayloadBytes: cfg.PayloadBytes, Partitions: cfg.Partitions, LongPoll: cfg.LongPoll,
			Ack: cfg.Ack, Drain: cfg.Drain,
		},
	}
	if cfg.Messages == 0 {
		rep.Settings.DurationSec = cfg.Duration.Seconds()
	}
	pushHist := new(Histogram)
	for _, h := range pushHists {
		pushHist.Merge(h)
	}
	pushed := r.pushed.Load()
	rep.Push = PushStats{
		Messages: pushed,
		Requests: r.requests.Load(),
		Seconds:  pushElapsed.Seconds(),
		Latency:  pushHist.Summary(),
	}
	if s := pushElapsed.Seconds(); s > 0 {
		rep.Push.MsgPerSec = float64(pushed) / s
		rep.Push.MBPerSec = float64(pushed) * float64(r.payloadSize()) / s / 1e6
	}
	if cfg.Consumers > 0 {
		e2e := new(Histogram)
		for _, h := range consumerHists {
			if h != nil {
				e2e.Merge(h)
			}
		}
		// Consumption lasts from the consumers' start to the last delivery.
		span := time.Unix(0, r.lastRecvNs.Load()).Sub(consumeStart)
		rep.Consume = &Consume{
			Messages:  r.delivered.Load(),
			Unique:    r.ver.TotalUnique(),
			Seconds:   span.Seconds(),
			Forwarded: r.forwarded.Load(),
			EndToEnd:  e2e.Summary(),
			TimedOut:  timedOut,
		}
		if span > 0 {
			rep.Consume.MsgPerSec = float64(rep.Consume.Messages) / span.Seconds()
		}
		r.ver.Finish(sent)
		rep.Verification = Verification{Checked: true, Violations: r.ver.Violations(), Details: r.ver.Details()}
	}
	if rep.Verification.Violations == nil {
		rep.Verification.Violations = map[string]int64{}
	}
	rep.Errors = r.errs.snapshot()
	return rep, nil
}

// payloadSize is the size of a typical payload of this run.
func (r *runner) payloadSize() int {
	return len(appendPayload(nil, r.run, 0, 0, time.Now().UnixNano(), r.cfg.PayloadBytes))
}

// startProgress prints a line per second until the returned func is called.
func (r *runner) startProgress(ctx context.Context) (stop func()) {
	if r.cfg.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	var once sync.Once
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		start := time.Now()
		var lastIn, lastOut int64
		lastAt := start
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case now := <-t.C:
				in, out := r.pushed.Load(), r.delivered.Load()
				dt := now.Sub(lastAt).Seconds()
				line := fmt.Sprintf("%6.1fs  in %9.0f msg/s  out %9.0f msg/s", now.Sub(start).Seconds(),
					float64(in-lastIn)/dt, float64(out-lastOut)/dt)
				if r.cfg.Consumers > 0 {
					// Messages pushed but not yet received, counted once per group.
					inFlight := in*int64(len(r.groups)) - r.ver.TotalUnique()
					line += fmt.Sprintf("  in flight %8d", inFlight)
				}
				line += fmt.Sprintf("  pushed %d  errors %d", in, r.errs.n.Load())
				fmt.Fprintln(r.cfg.Progress, line)
				lastIn, lastOut, lastAt = in, out, now
			}
		}
	}()
	return func() {
		once.Do(func() { close(done) })
		wg.Wait()
	}
}

// produce pushes quota messages (or until deadline when quota < 0) in
// batches, one request in flight, so a producer's messages reach each
// partition in sequence order.
func (r *runner) produce(ctx context.Context, p int, quota int64, deadline time.Time, hist *Histogram) Sent {
	cfg := r.cfg
	b := newPushBodyBuilder(cfg.Queue, r.run, cfg.Partitions, cfg.PayloadBytes)
	var body []byte
	var seq int64
	s := Sent{Unconfirmed: map[int64]bool{}}
	// With a rate cap each producer sends its share of batches on a fixed
	// schedule; producers start staggered so their pushes do not bunch up.
	var every time.Duration
	next := time.Now()
	if cfg.Rate > 0 {
		every = time.Duration(float64(time.Second) * float64(cfg.PushBatch*cfg.Producers) / cfg.Rate)
		next = next.Add(every * time.Duration(p) / time.Duration(cfg.Producers))
	}
	for ctx.Err() == nil {
		if quota >= 0 && seq >= quota || quota < 0 && !time.Now().Before(deadline) {
			break
		}
		if every > 0 {
			if wait := time.Until(next); wait > 0 {
				select {
				case <-ctx.Done():
					continue
				case <-time.After(wait):
				}
			}
			next = next.Add(every)
			// A producer that fell behind (the broker was slow) makes up at
			// most maxCatchUp of its schedule: a sustained slowdown shows as
			// a lower rate instead of being hidden by a burst afterwards.
			if behind := time.Since(next); behind > maxCatchUp {
				next = time.Now().Add(-maxCatchUp)
			}
		}
		n := cfg.PushBatch
		if quota >= 0 {
			n = int(min(int64(n), quota-seq))
		}
		body = b.build(body[:0], p, seq, n, time.Now().UnixNano())
		confirmed := r.push(ctx, body, n, hist)
		for i, ok := range confirmed {
			if !ok {
				s.Unconfirmed[seq+int64(i)] = true
			}
		}
		seq += int64(n)
	}
	s.Attempted = seq
	return s
}

// maxCatchUp bounds how far behind its schedule a rate-capped producer may
// be and still send without waiting.
const maxCatchUp = time.Second

// push sends one push request, retrying transport failures and 5xx answers
// (safe: every item has a transaction id, so a retry of a push that did
// commit comes back "duplicate"). It returns which items are known stored.
func (r *runner) push(ctx context.Context, body []byte, n int, hist *Histogram) []bool {
	confirmed := make([]bool, n)
	const attempts = 3
	for attempt := range attempts {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return confirmed
			case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
			}
		}
		rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		start := time.Now()
		status, resp, err := r.c.do(rctx, http.MethodPost, "/api/v1/push", body)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return confirmed // interrupted: outcome unknown, not the broker's fault
			}
			r.errs.add("push: transport: " + shortErr(err))
			continue
		}
		r.requests.Add(1)
		hist.RecordDuration(time.Since(start))
		if status != http.StatusCreated {
			r.errs.add(fmt.Sprintf("push: HTTP %d", status))
			if status >= 500 {
				continue
			}
			return confirmed // a 4xx will not get better by retrying
		}
		var verdicts []api.PushVerdict
		if err := fastjson.Unmarshal(resp, &verdicts); err != nil || len(verdicts) != n {
			r.errs.add("push: malformed answer")
			return confirmed
		}
		var ok int64
		for i, v := range verdicts {
			switch v.Status {
			case api.PushQueued, api.PushBuffered:
				confirmed[i] = true
				ok++
			case api.PushDuplicate:
				// Expected only when an earlier attempt of this request
				// committed; either way the message is stored.
				confirmed[i] = true
				ok++
				if attempt == 0 {
					r.errs.add("push: unexpected duplicate")
				}
			default:
				r.errs.add("push: item " + string(v.Status) + ": " + leaseOf(v.Error))
			}
		}
		r.pushed.Add(ok)
		return confirmed
	}
	return confirmed
}

// popPath is the pop request of group g.
func (r *runner) popPath(g int) string {
	cfg := r.cfg
	q := url.Values{}
	q.Set("batch", strconv.Itoa(cfg.PopBatch))
	if cfg.PopPartitions > 1 {
		q.Set("partitions", strconv.Itoa(cfg.PopPartitions))
	}
	if r.groups[g] != queueModeGroup {
		q.Set("consumerGroup", r.groups[g])
	}
	if cfg.LongPoll {
		q.Set("wait", "true")
		q.Set("timeout", strconv.FormatInt(cfg.PollTimeout.Milliseconds(), 10))
	}
	if cfg.Ack == AckAuto {
		q.Set("autoAck", "true")
	}
	return "/api/v1/pop/queue/" + url.PathEscape(cfg.Queue) + "?" + q.Encode()
}

// consume pops, verifies and acknowledges until ctx ends.
func (r *runner) consume(ctx context.Context, g int, hist *Histogram) {
	cfg := r.cfg
	path := r.popPath(g)
	// The client waits a little longer than the broker, so the broker's 204
	// always wins the race (as Queen's clients do).
	popTimeout := 30 * time.Second
	if cfg.LongPoll {
		popTimeout = cfg.PollTimeout + 5*time.Second
	}
	pause := func() {
		select {
		case <-ctx.Done():
		case <-time.After(cfg.PollInterval):
		}
	}
	var batch []Delivery
	for ctx.Err() == nil {
		rctx, cancel := context.WithTimeout(ctx, popTimeout)
		status, body, err := r.c.do(rctx, http.MethodGet, path, nil)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				r.errs.add("pop: transport: " + shortErr(err))
				pause()
			}
			continue
		}
		if status == http.StatusNoContent {
			if !cfg.LongPoll {
				pause()
			}
			continue
		}
		if status != http.StatusOK {
			r.errs.add(fmt.Sprintf("pop: HTTP %d", status))
			pause()
			continue
		}
		var resp api.PopResponse
		if err := fastjson.Unmarshal(body, &resp); err != nil {
			r.errs.add("pop: malformed answer")
			continue
		}
		now := time.Now()
		batch = batch[:0]
		for _, m := range resp.Messages {
			var pl payload
			if err := fastjson.Unmarshal(m.Data, &pl); err != nil || pl.Run != r.run {
				// Left over from another run on a reused queue: not ours to check.
				r.errs.add("pop: foreign message")
				continue
			}
			hist.Record(now.UnixNano() - pl.SentAt)
			batch = append(batch, Delivery{Partition: m.Partition, Producer: pl.Producer, Seq: pl.Seq})
		}
		// Record before acknowledging: see Verifier.Record.
		r.ver.Record(g, batch)
		r.delivered.Add(int64(len(batch)))
		r.lastRecvNs.Store(now.UnixNano())
		switch cfg.Ack {
		case AckBatch:
			r.ackBatch(ctx, g, resp.Messages)
		case AckTx:
			r.ackTx(ctx, g, resp)
		}
		if r.producersDone.Load() && r.ver.Unique(g) >= r.expected.Load() {
			r.groupCancel[g]() // this group has everything: stop its other consumers too
		}
	}
}

// leaseOf is *p, or "" for nil (a lease id, an error text).
func leaseOf(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func (r *runner) ackBatch(ctx context.Context, g int, msgs []api.PopMessage) {
	body := api.AckBatchRequest{ConsumerGroup: r.groups[g], Acknowledgments: make([]api.Ack, len(msgs))}
	for i, m := range msgs {
		body.Acknowledgments[i] = api.Ack{TransactionID: m.TransactionID, PartitionID: m.PartitionID,
			LeaseID: leaseOf(m.LeaseID), Status: api.AckCompleted}
	}
	raw, _ := fastjson.Marshal(body)
	// An ack must not be cut short by the end of the run: an abandoned lease
	// would hold the lane for the whole lease time.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 60*time.Second)
	defer cancel()
	status, resp, err := r.c.do(actx, http.MethodPost, "/api/v1/ack/batch", raw)
	if err != nil {
		r.errs.add("ack: transport: " + shortErr(err))
		return
	}
	if status != http.StatusOK {
		r.errs.add(fmt.Sprintf("ack: HTTP %d", status))
		return
	}
	var verdicts []api.AckVerdict
	if err := fastjson.Unmarshal(resp, &verdicts); err != nil || len(verdicts) != len(msgs) {
		r.errs.add("ack: malformed answer")
		return
	}
	for _, v := range verdicts {
		if !v.Success {
			r.errs.add("ack: " + leaseOf(v.Error))
		}
	}
}

// ackTx acknowledges the batch and pushes one message on to the forward
// queue in one transaction: the shape of a pipeline stage.
func (r *runner) ackTx(ctx context.Context, g int, resp api.PopResponse) {
	msgs := resp.Messages
	if len(msgs) == 0 {
		return
	}
	ops := make([]api.TransactionOperation, 0, len(msgs)+1)
	for _, m := range msgs {
		ops = append(ops, api.TransactionOperation{Type: api.OperationAck, Ack: api.Ack{TransactionID: m.TransactionID,
			PartitionID: m.PartitionID, Status: api.AckCompleted, ConsumerGroup: r.groups[g], LeaseID: leaseOf(m.LeaseID)}})
	}
	fwd, _ := json.Marshal(map[string]any{"from": r.groups[g], "count": len(msgs), "first": msgs[0].TransactionID})
	ops = append(ops, api.TransactionOperation{Type: api.OperationPush,
		Items: []api.PushItem{{Queue: r.forwardQueue(), Partition: msgs[0].Partition, Payload: fwd}}})
	body := api.TransactionRequest{Operations: ops}
	if l := leaseOf(resp.LeaseID); l != "" {
		body.RequiredLeases = []string{l}
	}
	raw, _ := json.Marshal(body)
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 60*time.Second)
	defer cancel()
	status, out, err := r.c.do(actx, http.MethodPost, "/api/v1/transaction", raw)
	if err != nil {
		r.errs.add("tx: transport: " + shortErr(err))
		return
	}
	if status != http.StatusOK {
		r.errs.add(fmt.Sprintf("tx: HTTP %d", status))
		return
	}
	var tr api.TransactionResponse
	if err := json.Unmarshal(out, &tr); err != nil {
		r.errs.add("tx: malformed answer")
		return
	}
	if !tr.Success {
		r.errs.add("tx: failed: " + leaseOf(tr.Error))
		return
	}
	r.forwarded.Add(1)
}

// shortErr keeps error kinds few: the tail of a transport error names the
// cause ("connection refused", "EOF") without the URL that precedes it.
func shortErr(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 {
		s = s[i+2:]
	}
	return s
}

// percentOf is push and consume msg/s as percentages of a limit's rows/s.
func (r *Report) percentOf(l *LimitResult) (push, consume float64) {
	if l.RowsPerSec <= 0 {
		return 0, 0
	}
	push = 100 * r.Push.MsgPerSec / l.RowsPerSec
	if r.Consume != nil {
		consume = 100 * r.Consume.MsgPerSec / l.RowsPerSec
	}
	return push, consume
}
