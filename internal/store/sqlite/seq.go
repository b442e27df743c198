package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// Message offsets. A message's offset is its rowid (messages.seq), and
// SQLite gives a row inserted without one the largest rowid in the table
// plus one. Once retention deletes messages that is wrong: if the newest rows
// of the table are deleted (a queue emptied by its retention), the next
// message would get an offset at or below the cursor of a lane of its
// partition and never be delivered. The writer therefore hands out offsets
// itself, from a counter that only grows: it starts above every offset a
// message or a partition ever recorded (partitions.last_offset remembers the
// newest offset of a partition even after its messages are gone), and a
// rolled-back insert merely leaves a gap, which offsets allow.

// highestSeq returns the highest offset the database has recorded.
func highestSeq(ctx context.Context, db *sql.DB) (int64, error) {
	var n int64
	err := db.QueryRowContext(ctx, `SELECT max(
		COALESCE((SELECT max(seq) FROM messages), 0),
		COALESCE((SELECT max(last_offset) FROM partitions), 0))`).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("read the highest message offset: %w", err)
	}
	return n, nil
}

// takeSeq hands out the offset for a message about to be inserted. If the
// insert leaves it out (a duplicate), the offset stays unused: a gap.
func (t *txn) takeSeq() int64 {
	t.cache.lastSeq++
	return t.cache.lastSeq
}
