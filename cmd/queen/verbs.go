package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/client"
)

// The exit codes of the client verbs, for scripts to branch on.
const (
	exitOK          = 0
	exitError       = 1 // anything else: a refused request, a failed item …
	exitUsage       = 2 // a command line queen does not understand
	exitNotFound    = 3 // the queue, group or message does not exist
	exitDenied      = 4 // 401 or 403: the token is missing, invalid or lacks a role
	exitUnreachable = 5 // no answer from the broker, or 503
	exitEmpty       = 6 // pop found no message
)

const exitCodesHelp = `Exit codes: 0 success; 1 error; 2 usage; 3 not found; 4 unauthorized or
forbidden; 5 broker unreachable or unavailable (503); 6 nothing to pop.`

// errEmpty is a pop that found nothing.
var errEmpty = errors.New("no message")

// exitCode is the status the program exits with after err.
func exitCode(err error) int {
	var ae *api.Error
	var ue usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		return exitUsage
	case errors.Is(err, errEmpty):
		return exitEmpty
	case errors.As(err, &ae):
		switch ae.Status {
		case 401, 403:
			return exitDenied
		case 404:
			return exitNotFound
		case 502, 503, 504:
			return exitUnreachable
		}
		return exitError
	}
	// Only a failed connection or HTTP exchange is "unreachable": the
	// net.Error interface would also match a local file's syscall.Errno.
	var oe *net.OpError
	var ue2 *url.Error
	if errors.As(err, &oe) || errors.As(err, &ue2) {
		return exitUnreachable
	}
	return exitError
}

// target is the broker a verb speaks to and how it prints.
type target struct {
	getenv  func(string) string
	url     string
	token   string
	context string
	output  string
	stdout  io.Writer
}

// clientFlags adds the flags every client verb takes.
func (t *target) clientFlags(c *cobra.Command) {
	c.Flags().StringVar(&t.url, "url", "", "broker URL (env QUEEN_URL; else the current context; default "+client.DefaultURL+")")
	c.Flags().StringVar(&t.token, "token", "", "bearer token (env QUEEN_TOKEN; else the current context's)")
	c.Flags().StringVar(&t.context, "context", "", "named context to use instead of the current one (see 'queen context')")
	c.Flags().StringVarP(&t.output, "output", "o", "table", "output: table (aligned, for people) or json (for scripts)")
}

// client resolves the broker: flag, then environment, then context.
func (t *target) client() (*client.Client, error) {
	if t.output != "table" && t.output != "json" {
		return nil, usageError{fmt.Errorf("-o %q: want table or json", t.output)}
	}
	u, tok := t.url, t.token
	if u == "" {
		u = t.getenv("QUEEN_URL")
	}
	if tok == "" {
		tok = t.getenv("QUEEN_TOKEN")
	}
	if u == "" || tok == "" || t.context != "" {
		cf, err := loadContexts(t.getenv)
		if err != nil {
			return nil, err
		}
		name := cmp(t.context, cf.Current)
		if name != "" {
			ctx, ok := cf.Contexts[name]
			if !ok {
				return nil, usageError{fmt.Errorf("no context %q; see 'queen context list'", name)}
			}
			if t.url == "" && (u == "" || t.context != "") {
				u = ctx.URL
			}
			if t.token == "" && (tok == "" || t.context != "") {
				tok = ctx.Token
			}
		}
	}
	// A person waits at the prompt: a broker that does not answer fails
	// in seconds, not after the library's ten tries.
	return client.New(client.Config{URL: u, Token: tok, Retry: client.Retry{Attempts: 3, Max: 2 * time.Second}})
}

func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// json reports whether the output is JSON.
func (t *target) json() bool { return t.output == "json" }

// print writes v as indented JSON.
func (t *target) print(v any) error {
	enc := json.NewEncoder(t.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table writes rows aligned under header.
func (t *target) table(header []string, rows [][]string) error {
	w := tabwriter.NewWriter(t.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, strings.Join(header, "\t"))
	for _, r := range rows {
		fmt.Fprintln(w, strings.Join(r, "\t"))
	}
	return w.Flush()
}

func str(p *string) string {
	if p == nil {
		return "-"
	}
	return *p
}

func when(t *api.Time) string {
	if t == nil {
		return "-"
	}
	return t.String()
}

// verb builds a client verb: it parses, resolves the broker and runs fn.
func (t *target) verb(use, short, long string, args cobra.PositionalArgs,
	fn func(ctx context.Context, c *client.Client, args []string) error) *cobra.Command {
	cmd := &cobra.Command{
		Use: use, Short: short, Long: long + "\n\n" + exitCodesHelp, Args: args,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := t.client()
			if err != nil {
				return err
			}
			return fn(cmd.Context(), c, args)
		},
	}
	t.clientFlags(cmd)
	return cmd
}

// exactArgs is cobra.ExactArgs as a usage error.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError{fmt.Errorf("%s takes %d argument(s), got %d; see '%s --help'", cmd.Name(), n, len(args), cmd.CommandPath())}
		}
		return nil
	}
}

func rangeArgs(lo, hi int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < lo || len(args) > hi {
			return usageError{fmt.Errorf("%s takes %d to %d arguments, got %d; see '%s --help'", cmd.Name(), lo, hi, len(args), cmd.CommandPath())}
		}
		return nil
	}
}

// addClientVerbs adds the verbs that speak to a running broker.
func addClientVerbs(root *cobra.Command, getenv func(string) string, stdout io.Writer) {
	newTarget := func() *target { return &target{getenv: getenv, stdout: stdout} }

	// push
	{
		t := newTarget()
		var partition, tx string
		cmd := t.verb("push QUEUE [PAYLOAD]", "Push a message, or JSON lines from stdin",
			"Push PAYLOAD to QUEUE, or, without PAYLOAD, every line of stdin as one message\n"+
				"(blank lines are skipped). A payload that is not JSON is sent as a JSON string.\n"+
				"--tx sets the transactionId, which makes a push safe to repeat; with stdin\n"+
				"line N gets <ID>-<N>. Prints one verdict per message.",
			rangeArgs(1, 2), func(ctx context.Context, c *client.Client, args []string) error {
				var lines [][]byte
				if len(args) == 2 {
					lines = [][]byte{[]byte(args[1])}
				} else {
					sc := bufio.NewScanner(os.Stdin)
					if r, ok := stdinOf(ctx); ok {
						sc = bufio.NewScanner(r)
					}
					sc.Buffer(make([]byte, 64<<10), 64<<20)
					for sc.Scan() {
						if l := strings.TrimSpace(sc.Text()); l != "" {
							lines = append(lines, []byte(l))
						}
					}
					if err := sc.Err(); err != nil {
						return fmt.Errorf("read stdin: %w", err)
					}
				}
				var verdicts []api.PushVerdict
				for start := 0; start < len(lines); start += 500 {
					batch := lines[start:min(start+500, len(lines))]
					items := make([]api.PushItem, len(batch))
					for i, l := range batch {
						payload := json.RawMessage(l)
						if !json.Valid(l) {
							payload, _ = json.Marshal(string(l))
						}
						items[i] = api.PushItem{Queue: args[0], Partition: partition, Payload: payload}
						if tx != "" {
							items[i].TransactionID = tx
							if len(args) == 1 {
								items[i].TransactionID = fmt.Sprintf("%s-%d", tx, start+i+1)
							}
						}
					}
					v, err := c.Push(ctx, items...)
					for i := range v {
						v[i].Index += start
					}
					verdicts = append(verdicts, v...)
					if err != nil {
						t.printVerdicts(verdicts)
						return err
					}
				}
				return t.printVerdicts(verdicts)
			})
		cmd.Flags().StringVar(&partition, "partition", "", "partition to push to (default: the queue's default one)")
		cmd.Flags().StringVar(&tx, "tx", "", "transactionId of the message (deduplicates a repeated push)")
		root.AddCommand(cmd)
	}

	// pop
	{
		t := newTarget()
		var group, partition string
		var batch int
		var wait time.Duration
		var noAck bool
		cmd := t.verb("pop QUEUE", "Pop messages, print them and acknowledge them",
			"Pop up to --batch messages of QUEUE for --group (default: queue mode), print\n"+
				"them, and acknowledge them as completed; --no-ack leaves them leased (they\n"+
				"come back when the lease expires). --wait long-polls that long for a message.\n"+
				"Nothing to pop exits with 6.",
			exactArgs(1), func(ctx context.Context, c *client.Client, args []string) error {
				res, err := c.Pop(ctx, args[0], client.PopOptions{Group: group, Partition: partition, Batch: batch,
					Wait: wait > 0, Timeout: wait})
				if err != nil {
					return err
				}
				if res == nil {
					if t.json() {
						t.print([]any{})
					}
					return errEmpty
				}
				if t.json() {
					if err := t.print(res); err != nil {
						return err
					}
				} else {
					if err := t.printMessages(res.Messages); err != nil {
						return err
					}
				}
				if noAck {
					return nil
				}
				_, err = c.AckBatch(ctx, client.Acks(res.Messages, api.AckCompleted, ""))
				return err
			})
		cmd.Flags().StringVarP(&group, "group", "g", "", "consumer group (default: queue mode)")
		cmd.Flags().StringVar(&partition, "partition", "", "pop only this partition")
		cmd.Flags().IntVar(&batch, "batch", 1, "most messages to pop")
		cmd.Flags().DurationVar(&wait, "wait", 0, "long-poll this long for a message (0: answer at once)")
		cmd.Flags().BoolVar(&noAck, "no-ack", false, "print without acknowledging")
		root.AddCommand(cmd)
	}

	// tail
	{
		t := newTarget()
		var group string
		var peek bool
		var batch int
		cmd := t.verb("tail QUEUE", "Follow a queue like tail -f, acknowledging as it goes",
			"Print the messages of QUEUE as they arrive, one line each (-o json: one JSON\n"+
				"object per line), until interrupted. It consumes for --group (default: queue\n"+
				"mode), acknowledging each batch once printed. --peek consumes nothing of\n"+
				"anyone's: it reads the messages pushed from now on in a private consumer\n"+
				"group, deleted when tail stops.",
			exactArgs(1), func(ctx context.Context, c *client.Client, args []string) error {
				o := client.ConsumeOptions{Group: group, BatchSize: batch, WaitTimeout: 10 * time.Second}
				if peek {
					o.Group = "queen-tail-" + client.NewTransactionID()[:8]
					o.SubscriptionFrom = "now"
					defer c.DeleteGroup(context.WithoutCancel(ctx), o.Group)
				}
				enc := json.NewEncoder(t.stdout)
				err := c.Consume(ctx, args[0], func(_ context.Context, msgs []api.PopMessage) error {
					for _, m := range msgs {
						if t.json() {
							enc.Encode(m)
						} else {
							fmt.Fprintf(t.stdout, "%s  %s  %s  %s\n", m.CreatedAt.String(), m.Partition, m.TransactionID, m.Data)
						}
					}
					return nil
				}, o)
				if ctx.Err() != nil && err == nil {
					return nil
				}
				return err
			})
		cmd.Flags().StringVarP(&group, "group", "g", "", "consumer group (default: queue mode)")
		cmd.Flags().BoolVar(&peek, "peek", false, "read new messages without consuming them for anyone")
		cmd.Flags().IntVar(&batch, "batch", 100, "most messages per pop")
		root.AddCommand(cmd)
	}

	// queues
	{
		t := newTarget()
		cmd := t.verb("queues", "List the queues", "List the queues with their partitions and messages.",
			exactArgs(0), func(ctx context.Context, c *client.Client, _ []string) error {
				l, err := c.Queues(ctx, client.Page{Limit: 1000})
				if err != nil {
					return err
				}
				if t.json() {
					return t.print(l.Queues)
				}
				rows := make([][]string, len(l.Queues))
				for i, q := range l.Queues {
					rows[i] = []string{q.Name, str(q.Namespace), str(q.Task), fmt.Sprint(q.Partitions),
						fmt.Sprint(q.Messages.Pending), fmt.Sprint(q.Messages.Processing), fmt.Sprint(q.Messages.Total)}
				}
				return t.table([]string{"QUEUE", "NAMESPACE", "TASK", "PARTITIONS", "PENDING", "PROCESSING", "TOTAL"}, rows)
			})
		root.AddCommand(cmd)
	}

	// queue
	{
		t := newTarget()
		cmd := t.verb("queue QUEUE", "Describe a queue and its partitions", "Describe QUEUE: its totals and each partition's counts.",
			exactArgs(1), func(ctx context.Context, c *client.Client, args []string) error {
				q, err := c.Queue(ctx, args[0])
				if err != nil {
					return err
				}
				if t.json() {
					return t.print(q)
				}
				fmt.Fprintf(t.stdout, "Queue:      %s\nNamespace:  %s\nTask:       %s\nCreated:    %s\n", q.Name, str(q.Namespace), str(q.Task), q.CreatedAt.String())
				tt := q.Totals
				fmt.Fprintf(t.stdout, "Messages:   %d total, %d pending, %d processing, %d completed, %d failed, %d dead-lettered\n\n",
					tt.Total, tt.Pending, tt.Processing, tt.Completed, tt.Failed, tt.DeadLetter)
				rows := make([][]string, len(q.Partitions))
				for i, p := range q.Partitions {
					rows[i] = []string{p.Name, fmt.Sprint(p.Stats.Pending), fmt.Sprint(p.Stats.Processing),
						fmt.Sprint(p.Stats.Completed), fmt.Sprint(p.Stats.DeadLetter), when(p.LastActivity)}
				}
				return t.table([]string{"PARTITION", "PENDING", "PROCESSING", "COMPLETED", "DLQ", "LAST ACTIVITY"}, rows)
			})
		root.AddCommand(cmd)
	}

	// lag
	{
		t := newTarget()
		var group string
		cmd := t.verb("lag", "Show consumer groups' lag",
			"Show every consumer group's lag per queue, or with --group that group's lag\nper partition.",
			exactArgs(0), func(ctx context.Context, c *client.Client, _ []string) error {
				if group == "" {
					gs, err := c.Groups(ctx, client.Page{Limit: 1000})
					if err != nil {
						return err
					}
					if t.json() {
						return t.print(gs)
					}
					rows := make([][]string, len(gs))
					for i, g := range gs {
						rows[i] = []string{g.Name, g.QueueName, fmt.Sprint(g.TotalLag), fmt.Sprint(g.PartitionsWithLag),
							fmt.Sprintf("%.0fs", g.MaxTimeLag), g.State}
					}
					return t.table([]string{"GROUP", "QUEUE", "LAG", "LAGGING PARTITIONS", "MAX TIME LAG", "STATE"}, rows)
				}
				d, err := c.Group(ctx, group)
				if err != nil {
					return err
				}
				if t.json() {
					return t.print(d)
				}
				queues := make([]string, 0, len(d))
				for q := range d {
					queues = append(queues, q)
				}
				sort.Strings(queues)
				var rows [][]string
				for _, q := range queues {
					for _, p := range d[q].Partitions {
						lease := "-"
						if p.LeaseActive {
							lease = "held"
						}
						rows = append(rows, []string{q, p.Partition, fmt.Sprint(p.OffsetLag), fmt.Sprintf("%.0fs", p.TimeLagSeconds),
							fmt.Sprint(p.TotalConsumed), lease})
					}
				}
				return t.table([]string{"QUEUE", "PARTITION", "LAG", "TIME LAG", "CONSUMED", "LEASE"}, rows)
			})
		cmd.Flags().StringVarP(&group, "group", "g", "", "one group's lag per partition")
		root.AddCommand(cmd)
	}

	// delivery
	{
		cmd := &cobra.Command{Use: "delivery", Short: "Webhook delivery targets and a message's attempts", Args: noArgs}
		var queue string
		t := newTarget()
		targets := t.verb("targets", "List the delivery targets", "List the webhook delivery targets, without their secrets.",
			exactArgs(0), func(ctx context.Context, c *client.Client, _ []string) error {
				l, err := c.DeliveryTargets(ctx, queue)
				if err != nil {
					return err
				}
				if t.json() {
					return t.print(l)
				}
				rows := make([][]string, len(l))
				for i, d := range l {
					auth, state := "none", "active"
					if d.Auth != nil {
						auth = d.Auth.Mode
					}
					if d.Paused {
						state = "paused"
					}
					rows[i] = []string{d.ID, d.Queue, d.ConsumerGroup, d.URL, auth, fmt.Sprint(d.Sign), state}
				}
				return t.table([]string{"ID", "QUEUE", "GROUP", "URL", "AUTH", "SIGNED", "STATE"}, rows)
			})
		targets.Flags().StringVar(&queue, "queue", "", "only this queue's targets")
		t2 := newTarget()
		attempts := t2.verb("attempts QUEUE MESSAGE_ID", "Show a message's delivery attempts",
			"Show the delivery attempts of a message to each target of its queue: status,\nresponse code and latency.",
			exactArgs(2), func(ctx context.Context, c *client.Client, args []string) error {
				l, err := c.DeliveryAttempts(ctx, args[0], args[1])
				if err != nil {
					return err
				}
				if t2.json() {
					return t2.print(l)
				}
				var rows [][]string
				for _, d := range l {
					for _, a := range d.Attempts {
						rows = append(rows, []string{d.Target, d.Outcome, a.At, a.Status, fmt.Sprint(a.Code),
							fmt.Sprintf("%.1f", a.LatencyMs), a.Error})
					}
				}
				return t2.table([]string{"TARGET", "OUTCOME", "AT", "STATUS", "CODE", "MS", "ERROR"}, rows)
			})
		cmd.AddCommand(targets, attempts)
		root.AddCommand(cmd)
	}

	// dlq
	{
		dlq := &cobra.Command{Use: "dlq", Short: "List, requeue or delete dead letters", Args: noArgs}
		var f client.DLQFilter
		filter := func(cmd *cobra.Command) {
			cmd.Flags().StringVar(&f.Queue, "queue", "", "only this queue's dead letters")
			cmd.Flags().StringVarP(&f.Group, "group", "g", "", "only this consumer group's")
			cmd.Flags().StringVar(&f.Partition, "partition", "", "only this partition's")
		}
		t := newTarget()
		list := t.verb("list", "List dead letters", "List dead letters, newest first.", exactArgs(0),
			func(ctx context.Context, c *client.Client, _ []string) error {
				l, err := c.DLQ(ctx, f)
				if err != nil {
					return err
				}
				if t.json() {
					return t.print(l.Messages)
				}
				rows := make([][]string, len(l.Messages))
				for i, m := range l.Messages {
					rows[i] = []string{m.Queue, m.Partition, m.ConsumerGroup, m.PartitionID + "/" + m.TransactionID,
						fmt.Sprint(m.RetryCount), m.FailedAt.String(), m.ErrorMessage}
				}
				return t.table([]string{"QUEUE", "PARTITION", "GROUP", "MESSAGE", "RETRIES", "FAILED AT", "ERROR"}, rows)
			})
		filter(list)
		list.Flags().IntVar(&f.Limit, "limit", 100, "most dead letters to list")
		t2 := newTarget()
		var ids []string
		requeue := t2.verb("requeue", "Put dead letters back on their queues",
			"Requeue the dead letters named by --id PARTITION_ID/TRANSACTION_ID, or those\nthe filters select.",
			exactArgs(0), func(ctx context.Context, c *client.Client, _ []string) error {
				req := api.DLQRetryRequest{Queue: f.Queue, ConsumerGroup: f.Group, Partition: f.Partition}
				for _, id := range ids {
					p, tx, ok := strings.Cut(id, "/")
					if !ok {
						return usageError{fmt.Errorf("--id %q: want PARTITION_ID/TRANSACTION_ID", id)}
					}
					req.IDs = append(req.IDs, api.MessageRef{PartitionID: p, TransactionID: tx})
				}
				if len(ids) == 0 && f.Queue == "" && f.Group == "" && f.Partition == "" {
					return usageError{errors.New("dlq requeue needs --id or a filter (--queue, --group, --partition)")}
				}
				res, err := c.RequeueDLQ(ctx, req)
				if err != nil {
					return err
				}
				if t2.json() {
					return t2.print(res)
				}
				fmt.Fprintf(t2.stdout, "requeued %d, failed %d\n", res.Requeued, len(res.Failed))
				return nil
			})
		filter(requeue)
		requeue.Flags().StringSliceVar(&ids, "id", nil, "dead letter to requeue, as PARTITION_ID/TRANSACTION_ID (repeatable)")
		t3 := newTarget()
		var all bool
		del := t3.verb("delete", "Delete dead letters", "Delete the dead letters the filters select; --all deletes every one.",
			exactArgs(0), func(ctx context.Context, c *client.Client, _ []string) error {
				if !all && f.Queue == "" && f.Group == "" && f.Partition == "" {
					return usageError{errors.New("dlq delete needs a filter (--queue, --group, --partition) or --all")}
				}
				n, err := c.DeleteDLQ(ctx, f)
				if err != nil {
					return err
				}
				if t3.json() {
					return t3.print(api.DLQDeleteResponse{Deleted: n})
				}
				fmt.Fprintf(t3.stdout, "deleted %d\n", n)
				return nil
			})
		filter(del)
		del.Flags().BoolVar(&all, "all", false, "delete every dead letter")
		dlq.AddCommand(list, requeue, del)
		root.AddCommand(dlq)
	}

	// replay
	{
		t := newTarget()
		var group, to string
		var toEnd bool
		cmd := t.verb("replay QUEUE", "Move a consumer group's cursor on a queue",
			"Move --group's cursors on QUEUE back (or forward) to --to TIME (RFC 3339), so\n"+
				"that it consumes again from there, or to the end with --to-end (skipping\neverything pending).",
			exactArgs(1), func(ctx context.Context, c *client.Client, args []string) error {
				if group == "" || (to == "") == !toEnd {
					return usageError{errors.New("replay needs --group and one of --to TIME or --to-end")}
				}
				req := api.SeekRequest{ToEnd: toEnd}
				if to != "" {
					ts, err := time.Parse(time.RFC3339Nano, to)
					if err != nil {
						return usageError{fmt.Errorf("--to %q: want an RFC 3339 time such as 2026-07-30T09:00:00Z", to)}
					}
					req.Timestamp = ts.UTC().Format(time.RFC3339Nano)
				}
				res, err := c.Seek(ctx, group, args[0], req)
				if err != nil {
					return err
				}
				if t.json() {
					return t.print(res)
				}
				fmt.Fprintf(t.stdout, "group %s on %s: %d partition(s) moved\n", res.ConsumerGroup, res.QueueName, res.PartitionsUpdated)
				return nil
			})
		cmd.Flags().StringVarP(&group, "group", "g", "", "consumer group to move (required)")
		cmd.Flags().StringVar(&to, "to", "", "time to replay from (RFC 3339)")
		cmd.Flags().BoolVar(&toEnd, "to-end", false, "skip to the end")
		root.AddCommand(cmd)
	}

	// maintenance
	{
		t := newTarget()
		cmd := t.verb("maintenance on|off|status", "Turn push maintenance on or off, or show it",
			"While push maintenance is on, the broker buffers pushes on disk instead of\nstoring them.",
			exactArgs(1), func(ctx context.Context, c *client.Client, args []string) error {
				switch args[0] {
				case "status":
				case "on", "off":
					if _, err := c.SetMaintenance(ctx, args[0] == "on"); err != nil {
						return err
					}
				default:
					return usageError{fmt.Errorf("maintenance %q: want on, off or status", args[0])}
				}
				m, err := c.Maintenance(ctx)
				if err != nil {
					return err
				}
				if t.json() {
					return t.print(m)
				}
				onOff := map[bool]string{true: "on", false: "off"}
				fmt.Fprintf(t.stdout, "push maintenance: %s\npop maintenance:  %s\nbuffered messages: %d\n",
					onOff[m.MaintenanceMode], onOff[m.PopMaintenanceMode], m.BufferedMessages)
				return nil
			})
		cmd.ValidArgs = []string{"on", "off", "status"}
		root.AddCommand(cmd)
	}

	// health
	{
		t := newTarget()
		cmd := t.verb("health", "Show the broker's health", "Show the broker's /health: status, database, engine, version.",
			exactArgs(0), func(ctx context.Context, c *client.Client, _ []string) error {
				h, err := c.Health(ctx)
				if err != nil {
					return err
				}
				if t.json() {
					return t.print(h)
				}
				return t.table([]string{"STATUS", "DATABASE", "ENGINE", "VERSION", "AUTH"},
					[][]string{{h.Status, h.Database, h.Engine, h.Version, cmp(h.Auth, "-")}})
			})
		root.AddCommand(cmd)
	}

	root.AddCommand(contextCommand(getenv, stdout))
}

// stdinKey carries the verb's stdin in its context (tests set it).
type stdinKey struct{}

func stdinOf(ctx context.Context) (io.Reader, bool) {
	r, ok := ctx.Value(stdinKey{}).(io.Reader)
	return r, ok
}

// printVerdicts prints push verdicts.
func (t *target) printVerdicts(vs []api.PushVerdict) error {
	if t.json() {
		if vs == nil {
			vs = []api.PushVerdict{}
		}
		return t.print(vs)
	}
	rows := make([][]string, len(vs))
	for i, v := range vs {
		status := string(v.Status)
		if v.Error != nil {
			status += ": " + *v.Error
		}
		rows[i] = []string{fmt.Sprint(v.Index), status, v.TransactionID, str(v.MessageID)}
	}
	return t.table([]string{"INDEX", "STATUS", "TRANSACTION ID", "MESSAGE ID"}, rows)
}

// printMessages prints popped messages.
func (t *target) printMessages(ms []api.PopMessage) error {
	rows := make([][]string, len(ms))
	for i, m := range ms {
		rows[i] = []string{m.Partition, m.TransactionID, m.CreatedAt.String(), string(m.Data)}
	}
	return t.table([]string{"PARTITION", "TRANSACTION ID", "CREATED", "DATA"}, rows)
}

// contexts is the file of named contexts.
type contexts struct {
	Current  string                  `json:"current,omitempty"`
	Contexts map[string]brokerTarget `json:"contexts"`
}

type brokerTarget struct {
	URL   string `json:"url"`
	Token string `json:"token,omitempty"`
}

// contextsPath is QUEEN_CONFIG, else queen/contexts.json in the user's
// configuration folder.
func contextsPath(getenv func(string) string) (string, error) {
	if p := getenv("QUEEN_CONFIG"); p != "" {
		return p, nil
	}
	dir := getenv("XDG_CONFIG_HOME")
	if dir == "" {
		d, err := os.UserConfigDir()
		if err != nil {
			return "", fmt.Errorf("contexts: %w (set QUEEN_CONFIG)", err)
		}
		dir = d
	}
	return filepath.Join(dir, "queen", "contexts.json"), nil
}

func loadContexts(getenv func(string) string) (*contexts, error) {
	cf := &contexts{Contexts: map[string]brokerTarget{}}
	p, err := contextsPath(getenv)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return cf, nil
	}
	if err != nil {
		return nil, fmt.Errorf("contexts: %w", err)
	}
	if err := json.Unmarshal(b, cf); err != nil {
		return nil, fmt.Errorf("contexts: %s: %w", p, err)
	}
	if cf.Contexts == nil {
		cf.Contexts = map[string]brokerTarget{}
	}
	return cf, nil
}

func saveContexts(getenv func(string) string, cf *contexts) error {
	p, err := contextsPath(getenv)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("contexts: %w", err)
	}
	b, _ := json.MarshalIndent(cf, "", "  ")
	// Tokens are secrets: the file is the user's alone.
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("contexts: %w", err)
	}
	return os.Rename(tmp, p)
}

func contextCommand(getenv func(string) string, stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{Use: "context", Short: "Manage named brokers (URL and token) for the client verbs",
		Long: "Named contexts keep a broker's URL and token in a file (QUEEN_CONFIG, default\n" +
			"<user config dir>/queen/contexts.json, mode 0600). The client verbs use the\n" +
			"current context unless --url/--token or QUEEN_URL/QUEEN_TOKEN say otherwise.",
		Args: noArgs}
	var u, tok string
	add := &cobra.Command{Use: "add NAME --url URL [--token TOKEN]", Short: "Add or replace a context (and use it if it is the first)",
		Args: exactArgs(1), RunE: func(_ *cobra.Command, args []string) error {
			if _, err := client.New(client.Config{URL: u}); err != nil || u == "" {
				return usageError{fmt.Errorf("context add needs --url http(s)://host[:port]")}
			}
			cf, err := loadContexts(getenv)
			if err != nil {
				return err
			}
			cf.Contexts[args[0]] = brokerTarget{URL: u, Token: tok}
			if cf.Current == "" {
				cf.Current = args[0]
			}
			return saveContexts(getenv, cf)
		}}
	add.Flags().StringVar(&u, "url", "", "broker URL")
	add.Flags().StringVar(&tok, "token", "", "bearer token")
	use := &cobra.Command{Use: "use NAME", Short: "Make a context the current one", Args: exactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			cf, err := loadContexts(getenv)
			if err != nil {
				return err
			}
			if _, ok := cf.Contexts[args[0]]; !ok {
				return fmt.Errorf("no context %q; see 'queen context list'", args[0])
			}
			cf.Current = args[0]
			return saveContexts(getenv, cf)
		}}
	list := &cobra.Command{Use: "list", Short: "List the contexts; * marks the current one", Args: exactArgs(0),
		RunE: func(_ *cobra.Command, _ []string) error {
			cf, err := loadContexts(getenv)
			if err != nil {
				return err
			}
			names := make([]string, 0, len(cf.Contexts))
			for n := range cf.Contexts {
				names = append(names, n)
			}
			sort.Strings(names)
			w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "CURRENT\tNAME\tURL\tTOKEN")
			for _, n := range names {
				c := cf.Contexts[n]
				cur, hasTok := "", "-"
				if n == cf.Current {
					cur = "*"
				}
				if c.Token != "" {
					hasTok = "set"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", cur, n, c.URL, hasTok)
			}
			return w.Flush()
		}}
	cmd.AddCommand(add, use, list)
	return cmd
}
