// Package bench is `queen bench`: a load generator for any broker speaking
// Queen's HTTP API that measures push and consume throughput and latency,
// verifies that nothing was lost, duplicated or reordered, and can measure
// the raw batched-insert rate of the broker's database in the same run so
// results can be read as a fraction of what the machine can do.
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

const usage = `usage: queen bench [flags]          run a scenario against a broker
       queen bench limit [flags]    only measure the database's raw insert rate
       queen bench idle [flags]     parked long polls: idle cost and wake-up latency
       queen bench soak [flags]     a steady load for -duration (default 30m, -rate 1000) on a
                                    queue with retention on: first window vs last, RSS over time

Producers push numbered messages; consumers pop, check and acknowledge them.
A progress line is printed every second on stderr and a report at the end.
The exit status is non-zero if any message was lost, duplicated within a
consumer group, delivered on the wrong partition or out of order.

Flags:
`

// Main runs `queen bench` with args (the words after "bench"). Reports go
// to stdout, progress and diagnostics to stderr. It returns an error when
// the run could not be done or when verification found a violation.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	limitOnly := false
	if len(args) > 0 && args[0] == "idle" {
		return IdleMain(ctx, args[1:], stdout, stderr)
	}
	soak := false
	if len(args) > 0 && args[0] == "soak" {
		soak = true
		args = args[1:]
	}
	if len(args) > 0 && args[0] == "limit" {
		limitOnly = true
		args = args[1:]
	}
	fs := flag.NewFlagSet("queen bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	var cfg Config
	fs.StringVar(&cfg.URL, "url", "http://localhost:6632", "broker base URL")
	fs.StringVar(&cfg.Token, "token", "", "bearer token sent on every request (a JWT or an API token; deleting the queue at the end needs admin)")
	fs.StringVar(&cfg.Queue, "queue", "", "queue name (default: a fresh unique name per run)")
	fs.IntVar(&cfg.Producers, "producers", 4, "concurrent producers (one push in flight each)")
	fs.IntVar(&cfg.Consumers, "consumers", 4, "concurrent consumers per consumer group (0: push only)")
	fs.Int64Var(&cfg.Messages, "messages", 0, "total messages to push (0: push for -duration)")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "how long to push when -messages is 0")
	fs.Float64Var(&cfg.Rate, "rate", 0, "cap the total push rate in messages/s (0: unlimited)")
	fs.IntVar(&cfg.PushBatch, "push-batch", 100, "messages per push request")
	fs.IntVar(&cfg.PopBatch, "pop-batch", 100, "messages per pop request (batch parameter)")
	fs.IntVar(&cfg.PopPartitions, "pop-partitions", 1, "lanes one pop may claim (partitions parameter)")
	fs.IntVar(&cfg.PayloadBytes, "payload", 100, "payload size in bytes (JSON, padded)")
	fs.IntVar(&cfg.Partitions, "partitions", 16, "partitions producers spread messages over")
	fs.IntVar(&cfg.Groups, "groups", 0, "consumer groups, each receiving every message (0: queue mode)")
	fs.BoolVar(&cfg.LongPoll, "long-poll", true, "pop with wait=true")
	fs.DurationVar(&cfg.PollTimeout, "poll-timeout", 2*time.Second, "long-poll timeout sent to the broker")
	fs.DurationVar(&cfg.PollInterval, "poll-interval", 10*time.Millisecond, "pause after an empty pop without long-poll")
	fs.StringVar(&cfg.Ack, "ack", AckBatch, "ack mode: batch (one /ack/batch per pop), auto (autoAck=true), tx (/transaction acking the batch and pushing one message on)")
	fs.BoolVar(&cfg.Drain, "drain", false, "start consumers only after producers finish (measures draining a full queue)")
	fs.DurationVar(&cfg.DrainTimeout, "drain-timeout", 15*time.Second, "stop consuming when nothing new arrived for this long after producers finished")
	fs.BoolVar(&cfg.KeepQueue, "keep", false, "keep the queue after the run (default: delete it)")
	jsonOut := fs.Bool("json", false, "print the report as JSON on stdout")
	quiet := fs.Bool("quiet", false, "no progress lines")
	limitDB := fs.String("limit-db", "", "database to measure the raw insert limit on: sqlite:<dir> or postgres://…")
	withLimit := fs.String("with-limit", "", "same as -limit-db: measure the limit first, then run the scenario")
	limitFlag := fs.Bool("limit", false, "only measure the limit (like `queen bench limit`)")
	limitDuration := fs.Duration("limit-duration", 5*time.Second, "how long to measure the limit")
	limitClients := fs.Int("limit-clients", 0, "PostgreSQL limit writers (default: -producers)")
	limitMode := fs.String("limit-mode", LimitInsert, "how the limit writes a batch: insert (one multi-row INSERT), copy (one COPY; PostgreSQL), or both (insert, then copy; the push is reported against each)")
	limitTable := fs.String("limit-table", LimitTableQueen, "PostgreSQL limit table: queen (shaped like Queen's messages table) or broker (the PostgreSQL engine's own)")
	soakEvery := fs.Duration("sample-every", 5*time.Second, "soak: how often the broker's counters and memory are sampled")
	soakWindow := fs.Duration("window", 0, "soak: length of the first and last windows compared (default a minute, or a quarter of -duration)")
	soakRetention := fs.Duration("completed-retention", 10*time.Second, "soak: the queue's completedRetentionSeconds (the broker's RETENTION_INTERVAL decides how often retention runs)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (flags go before nothing else)", fs.Arg(0))
	}
	if soak {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["duration"] {
			cfg.Duration = 30 * time.Minute
		}
		if !set["rate"] {
			cfg.Rate = 1000
		}
		if !*quiet {
			cfg.Progress = stderr
		}
		rep, err := RunSoak(ctx, SoakConfig{Run: cfg, Every: *soakEvery, Window: *soakWindow,
			CompletedRetention: *soakRetention})
		if err != nil {
			return err
		}
		if *jsonOut {
			if err := writeJSON(stdout, rep); err != nil {
				return err
			}
		} else {
			printSoak(stdout, rep)
		}
		if rep.Run.Failed() {
			return fmt.Errorf("verification failed: %s", summarizeCounts(rep.Run.Verification.Violations))
		}
		return nil
	}
	limitOnly = limitOnly || *limitFlag
	target := *limitDB
	if target == "" {
		target = *withLimit
	}
	if limitOnly && target == "" {
		return errors.New("the limit needs -limit-db sqlite:<dir> or -limit-db postgres://…")
	}
	if !*quiet {
		cfg.Progress = stderr
	}

	var lims []*LimitResult // the first is the limit; with both modes the second is COPY's
	if target != "" {
		clients := *limitClients
		if clients <= 0 {
			clients = cfg.Producers
		}
		modes := []string{*limitMode}
		if *limitMode == "both" {
			modes = []string{LimitInsert, LimitCopy}
		}
		for _, mode := range modes {
			fmt.Fprintf(stderr, "measuring the raw %s limit on %s for %s …\n", mode, displayTarget(target), *limitDuration)
			lim, err := MeasureLimit(ctx, LimitConfig{
				Target: target, Batch: cfg.PushBatch, PayloadBytes: cfg.PayloadBytes, Partitions: cfg.Partitions,
				Clients: clients, Duration: *limitDuration, Mode: mode, Table: *limitTable,
			})
			if err != nil {
				return err
			}
			lims = append(lims, lim)
		}
		if limitOnly {
			for _, lim := range lims {
				if *jsonOut {
					if err := writeJSON(stdout, lim); err != nil {
						return err
					}
				} else {
					printLimit(stdout, lim)
				}
			}
			return nil
		}
	}

	rep, err := Run(ctx, cfg)
	if err != nil {
		return err
	}
	if len(lims) > 0 {
		rep.Limit = lims[0]
		rep.PushPercentOfLimit, rep.ConsumePercentOfLimit = rep.percentOf(lims[0])
	}
	if len(lims) > 1 {
		rep.CopyLimit = lims[1]
		rep.PushPercentOfCopyLimit, _ = rep.percentOf(lims[1])
	}
	if *jsonOut {
		if err := writeJSON(stdout, rep); err != nil {
			return err
		}
	} else {
		printReport(stdout, rep)
	}
	if rep.Failed() {
		for _, d := range rep.Verification.Details {
			if !*jsonOut {
				break // the text report already lists them
			}
			fmt.Fprintln(stderr, "violation:", d)
		}
		return fmt.Errorf("verification failed: %s", summarizeCounts(rep.Verification.Violations))
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return nil
}

func displayTarget(t string) string {
	if strings.HasPrefix(t, "sqlite:") {
		return t
	}
	return redactURL(t)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func printLimit(w io.Writer, l *LimitResult) {
	table := ""
	if l.Table != "" {
		table = ", " + l.Table + " table"
	}
	fmt.Fprintf(w, "limit    %s %s (%s%s), batch %d, %d writer(s): %.0f rows/s, %.1f MB/s (%d rows in %.1fs)\n",
		l.Mode, l.Target, l.Durability, table, l.Batch, l.Clients, l.RowsPerSec, l.MBPerSec, l.Rows, l.Seconds)
}

func printLatency(w io.Writer, name string, s LatencySummary) {
	fmt.Fprintf(w, "%-9s p50 %.2f ms  p90 %.2f ms  p99 %.2f ms  max %.2f ms  (%d samples)\n",
		name, s.P50Ms, s.P90Ms, s.P99Ms, s.MaxMs, s.Count)
}

func printReport(w io.Writer, r *Report) {
	s := r.Settings
	engine := r.Engine
	if engine == "" {
		engine = "unknown engine"
	}
	fmt.Fprintf(w, "broker   %s (%s), queue %s\n", r.URL, engine, r.Queue)
	groups := "queue mode"
	if s.Groups > 0 {
		groups = fmt.Sprintf("%d groups", s.Groups)
	}
	fmt.Fprintf(w, "scenario %d producers × batch %d, %d consumers × %s, pop batch %d, ack %s, long-poll %v, %d partitions, payload %d B%s\n",
		s.Producers, s.PushBatch, s.Consumers, groups, s.PopBatch, s.Ack, s.LongPoll, s.Partitions, s.PayloadBytes,
		map[bool]string{true: ", drain after push", false: ""}[s.Drain])
	fmt.Fprintf(w, "push     %d msgs in %.2fs: %.0f msg/s, %.2f MB/s, %d requests\n",
		r.Push.Messages, r.Push.Seconds, r.Push.MsgPerSec, r.Push.MBPerSec, r.Push.Requests)
	printLatency(w, "  push", r.Push.Latency)
	if c := r.Consume; c != nil {
		fmt.Fprintf(w, "consume  %d msgs (%d unique) in %.2fs: %.0f msg/s", c.Messages, c.Unique, c.Seconds, c.MsgPerSec)
		if c.Forwarded > 0 {
			fmt.Fprintf(w, ", %d transactions forwarded", c.Forwarded)
		}
		if c.TimedOut {
			fmt.Fprint(w, ", drain timed out")
		}
		fmt.Fprintln(w)
		printLatency(w, "  e2e", c.EndToEnd)
	}
	if r.Limit != nil {
		printLimit(w, r.Limit)
		fmt.Fprintf(w, "ratio    push = %.1f %% of the limit", r.PushPercentOfLimit)
		if r.Consume != nil {
			fmt.Fprintf(w, ", consume = %.1f %%", r.ConsumePercentOfLimit)
		}
		fmt.Fprintln(w)
	}
	if r.CopyLimit != nil {
		printLimit(w, r.CopyLimit)
		fmt.Fprintf(w, "ratio    push = %.1f %% of the copy limit\n", r.PushPercentOfCopyLimit)
	}
	if len(r.Errors) == 0 {
		fmt.Fprintln(w, "errors   none")
	} else {
		fmt.Fprintln(w, "errors")
		for _, k := range sortedKeys(r.Errors) {
			fmt.Fprintf(w, "  %6d  %s\n", r.Errors[k], k)
		}
	}
	switch {
	case !r.Verification.Checked:
		fmt.Fprintln(w, "verify   not checked (no consumers)")
	case !r.Failed():
		fmt.Fprintln(w, "verify   ok: no loss, no duplicates, order kept")
	default:
		fmt.Fprintf(w, "verify   FAILED: %s\n", summarizeCounts(r.Verification.Violations))
		for _, d := range r.Verification.Details {
			fmt.Fprintln(w, "  "+d)
		}
	}
}

func sortedKeys(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// Most frequent first: the cause of a bad run is usually at the top.
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}
