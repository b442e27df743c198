package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/queen-go/queen/internal/transfer"
	"github.com/queen-go/queen/internal/transfer/endpoint"
)

// errCountsDiffer: a copy ended but some entity has not as many rows at the
// target as at the source.
var errCountsDiffer = errors.New("the counts at the target differ from the source's")

// newMigrateCommand builds `queen migrate --from SRC --to DST`.
func newMigrateCommand(stdout io.Writer) *cobra.Command {
	var from, to, fromSchema, toSchema string
	var batch int
	cmd := &cobra.Command{
		Use:   "migrate --from SRC --to DST",
		Short: "Copy a broker's data into an empty database: from Queen's broker, or between engines",
		Long: "Copy queues with their options, partitions, messages, consumer groups with\n" +
			"their positions and subscriptions, and dead letters from SRC into DST;\n" +
			"from a queen-go source also key/value state, timers, ephemeral queues'\n" +
			"definitions, stream queries with their state, and webhook settings, keys\n" +
			"and delivery targets.\n" +
			"Each is a PostgreSQL URL (postgres://…; schema 'queen' unless\n" +
			"--from-schema / --to-schema name another) or an embedded engine's data\n" +
			"folder (a target folder may not exist yet). SRC may be a database of\n" +
			"Queen's own broker, recognised by its tables. Run it while no broker uses\n" +
			"SRC or DST. DST must hold no queue: a target that does is refused and\n" +
			"nothing is written. Leases in flight are released: those messages are\n" +
			"delivered again first. Progress goes to stdout; the last lines are\n" +
			"'<entity> <source count> <target count>'. It exits 0 only when every\n" +
			"count matches. An interrupted copy leaves a partial target, which a new\n" +
			"run refuses: remove the target (its folder, or DROP SCHEMA) and run again.\n" +
			"Put a password in PGPASSWORD or ~/.pgpass rather than in the URL, so that\n" +
			"it does not show in the process list.",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if from == "" || to == "" {
				return usageError{fmt.Errorf("migrate needs --from and --to; see '%s --help'", cmd.CommandPath())}
			}
			src, dst := endpoint.Parse(from, fromSchema), endpoint.Parse(to, toSchema)
			fmt.Fprintf(stdout, "copying %s into %s\n", src, dst)
			var last time.Time
			rep, err := endpoint.Migrate(cmd.Context(), src, dst, transfer.Options{Batch: batch,
				Progress: func(p transfer.Progress) {
					if time.Since(last) < 2*time.Second && p.Messages < p.Total {
						return
					}
					last = time.Now()
					rate := float64(p.Messages) / max(p.Elapsed.Seconds(), 0.001)
					fmt.Fprintf(stdout, "messages %s of %s (%s/s)\n", thousands(p.Messages), thousands(p.Total),
						thousands(int64(rate)))
				}})
			if err != nil {
				return err
			}
			for _, c := range rep {
				fmt.Fprintf(stdout, "%s %s %s\n", c.Entity, thousands(c.Source), thousands(c.Target))
			}
			if !rep.Match() {
				return errCountsDiffer
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&from, "from", "", "the source: a postgres:// URL or a data folder")
	f.StringVar(&to, "to", "", "the target: a postgres:// URL or a data folder")
	f.StringVar(&fromSchema, "from-schema", transfer.DefaultSchema, "the source's PostgreSQL schema")
	f.StringVar(&toSchema, "to-schema", transfer.DefaultSchema, "the target's PostgreSQL schema")
	f.IntVar(&batch, "batch", 1000, "rows per read and per write")
	return cmd
}

// thousands writes n with a comma every three digits: 3,500.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
