package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/queen-go/queen/internal/config"
	"github.com/queen-go/queen/internal/store/sqlite"
)

// newBackupCommand builds `queen backup DIR`: an online copy of the
// embedded engine's database.
func newBackupCommand(getenv func(string) string, stdout io.Writer) *cobra.Command {
	var dataDir string
	cmd := &cobra.Command{
		Use:   "backup DIR",
		Short: "Copy the embedded engine's database into DIR while the broker runs",
		Long: "Write a consistent, compacted copy of the embedded engine's database\n" +
			"(--data-dir, or QUEEN_DATA_DIR) to DIR/queen.db. The broker may keep\n" +
			"running: the copy is one snapshot and does not block writers. DIR must\n" +
			"not hold a queen.db already.\n\n" +
			"To restore, stop the broker and make DIR its data folder (or copy\n" +
			"DIR/queen.db into the data folder, removing queen.db-wal and\n" +
			"queen.db-shm there first).\n\n" +
			"The PostgreSQL engine is backed up with PostgreSQL's own tools\n" +
			"(pg_dump, or base backups with WAL archiving); see docs/operating.md.",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageError{fmt.Errorf("backup takes one folder; see '%s --help'", cmd.CommandPath())}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			// The settings table reads the environment as the broker
			// does: QUEEN_DATA_DIR and its default, and which engine.
			cfg, err := config.FromEnv(getenv)
			if err != nil {
				return configError(err)
			}
			if cfg.Engine() != "sqlite" {
				return fmt.Errorf("this broker is configured for PostgreSQL (QUEEN_DATABASE_URL or PG_HOST); back it up with pg_dump")
			}
			if !cmd.Flags().Changed("data-dir") {
				dataDir = cfg.DataDir
			}
			start := time.Now()
			out, err := sqlite.Backup(cmd.Context(), dataDir, args[0])
			if err != nil {
				return err
			}
			size := int64(0)
			if fi, err := os.Stat(out); err == nil {
				size = fi.Size()
			}
			fmt.Fprintf(stdout, "backed up %s to %s (%d bytes) in %s\n", dataDir, out, size, time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "the broker's data folder (default: QUEEN_DATA_DIR, else the broker's default)")
	return cmd
}
