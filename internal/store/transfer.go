package store

import (
	"context"
	"time"
)

// TransferStore is what a migration (package transfer) reads from and writes
// into an engine: the broker's data with offsets and positions in the
// engine-neutral form of counts, so that a copy between engines of different
// offset schemes keeps every group exactly where it was.
//
// The export side reads in bounded pages; the import side writes into an
// engine that holds no queue yet (TransferQueueCount is 0), one bounded batch
// per call, keeping the engine's counters, floors and ready lanes as its own
// pushes and joins would. Leases are never copied: a message under a lease at
// the source is delivered again at once from the target, as after a restart.
// It is not part of Store: the migration asserts it on the engines it opens.
type TransferStore interface {
	// TransferQueueCount counts the queues of every tenant: a migration
	// refuses a target that holds any.
	TransferQueueCount(ctx context.Context) (int64, error)
	// TransferCounts counts what a migration copies, every tenant together.
	TransferCounts(ctx context.Context) (TransferCounts, error)

	// ExportQueues calls fn with every queue of every tenant, by tenant and
	// name.
	ExportQueues(ctx context.Context, fn func(TransferQueue) error) error
	// ExportPartitions calls fn with every partition of a queue, by name.
	ExportPartitions(ctx context.Context, q TransferQueueRef, fn func(TransferPartition) error) error
	// ExportMessages returns up to limit messages of a partition after
	// offset after, in delivery order; Offset is set on each.
	ExportMessages(ctx context.Context, partitionID string, after int64, limit int) ([]TransferMessage, error)
	// ExportGroups returns the consumer groups of a queue with their cursor
	// offset in each of its partitions (by partition id).
	ExportGroups(ctx context.Context, q TransferQueueRef) ([]TransferGroup, error)
	// ExportDeadLetters returns up to limit dead letters of a partition with
	// an id after afterID, by id.
	ExportDeadLetters(ctx context.Context, partitionID string, afterID int64, limit int) ([]TransferDeadLetter, error)

	// ImportQueue creates a queue with its options, namespace and task.
	ImportQueue(ctx context.Context, q TransferQueue) error
	// ImportPartition creates a partition of a queue; it keeps p.ID when
	// set, else mints one, and returns the id.
	ImportPartition(ctx context.Context, q TransferQueueRef, p TransferPartition) (string, error)
	// ImportMessages appends messages to a partition, in the order given,
	// after those already imported, each with its own creation time.
	ImportMessages(ctx context.Context, partitionID string, ms []TransferMessage) error
	// ImportGroup records a consumer group of a queue with its subscription
	// and, per partition of the queue, how many of its messages (in delivery
	// order, counted from the first imported) the group has consumed. A
	// partition the map leaves out is read from its beginning.
	ImportGroup(ctx context.Context, q TransferQueueRef, g TransferGroup) error
	// ImportDeadLetters records dead letters of a partition's messages,
	// named by transactionId.
	ImportDeadLetters(ctx context.Context, partitionID string, ds []TransferDeadLetter) error

	// ExportKV returns up to limit key/value rows after (tenant, namespace,
	// key) after, in that order (byte-wise), expired ones not yet swept
	// included.
	ExportKV(ctx context.Context, after TransferKV, limit int) ([]TransferKV, error)
	// ImportKV writes key/value rows as they were, versions and times kept.
	ImportKV(ctx context.Context, rows []TransferKV) error

	// The broker's own features, each paged by its key (byte-wise) after
	// the last row of the previous page, and written back as it was: ids,
	// states, seals and times kept.

	// ExportTimers returns up to limit timers with an id after afterID,
	// in every state.
	ExportTimers(ctx context.Context, afterID string, limit int) ([]TransferTimer, error)
	ImportTimers(ctx context.Context, rows []TransferTimer) error
	// ExportEphemeralQueues returns up to limit ephemeral queues' definitions
	// after (tenant, name) after; their messages are not copied.
	ExportEphemeralQueues(ctx context.Context, after TransferEphemeralQueue, limit int) ([]TransferEphemeralQueue, error)
	ImportEphemeralQueues(ctx context.Context, rows []TransferEphemeralQueue) error
	// ExportStreamsQueries returns up to limit stream queries with an id
	// after afterID. The import keeps each query's state key, and the
	// target hands out new keys after the largest imported.
	ExportStreamsQueries(ctx context.Context, afterID string, limit int) ([]TransferStreamsQuery, error)
	ImportStreamsQueries(ctx context.Context, rows []TransferStreamsQuery) error
	// ExportStreamsState returns up to limit state rows a query can reach
	// (of a state key a query holds) after (state key, partition, key)
	// after; state left behind by a reset is not copied.
	ExportStreamsState(ctx context.Context, after TransferStreamsState, limit int) ([]TransferStreamsState, error)
	ImportStreamsState(ctx context.Context, rows []TransferStreamsState) error
	// ExportStreamsShards returns up to limit reachable shard sizes after
	// (state key, partition) after.
	ExportStreamsShards(ctx context.Context, after TransferStreamsShard, limit int) ([]TransferStreamsShard, error)
	ImportStreamsShards(ctx context.Context, rows []TransferStreamsShard) error
	// ExportWebhooks returns up to limit webhook documents (ingress
	// settings, API keys and signing secrets as stored, delivery targets,
	// …) after (tenant, kind, id) after. Signed requests' nonces are not
	// copied.
	ExportWebhooks(ctx context.Context, after TransferWebhook, limit int) ([]TransferWebhook, error)
	ImportWebhooks(ctx context.Context, rows []TransferWebhook) error
}

// TransferTimer is one timer row; times are Unix ms, 0 none.
type TransferTimer struct {
	ID, Tenant, Queue, Partition, TransactionID, MessageID string
	Namespace, Task, ProducerSub                           string
	Payload                                                []byte
	Sealed                                                 Seal
	FireAt                                                 int64
	Status, Error                                          string
	CreatedAt, FinishedAt                                  int64
}

// TransferEphemeralQueue is an ephemeral queue's definition.
type TransferEphemeralQueue struct {
	Tenant, Name         string
	TTLMs                int64
	MaxMessages          int64
	CreatedAt, ExpiresAt int64 // Unix ms
}

// TransferStreamsQuery is a stream query's registration.
type TransferStreamsQuery struct {
	ID, Tenant, Name, SourceQueue, SinkQueue, ConfigHash string
	StateKey                                             int64
	CreatedAt, UpdatedAt                                 int64 // Unix ms
}

// TransferStreamsState is one key of a query's state in one partition.
type TransferStreamsState struct {
	StateKey         int64
	PartitionID, Key string
	Value            []byte
	WindowEnd        *float64
	UpdatedAt        int64
}

// TransferStreamsShard is the size of a query's state in one partition.
type TransferStreamsShard struct {
	StateKey               int64
	PartitionID            string
	Rows, Bytes, UpdatedAt int64
}

// TransferWebhook is one webhook document.
type TransferWebhook struct {
	Tenant, Kind, ID, Queue string
	Doc                     []byte
	CreatedAt, UpdatedAt    int64 // Unix ms
}

// TransferKV is one key/value row.
type TransferKV struct {
	Tenant, Namespace, Key string
	Value                  []byte
	Version                int64
	ExpiresAt              int64 // Unix ms; 0 never
	CreatedAt, UpdatedAt   int64 // Unix ms
}

// TransferQueueRef names a queue across tenants.
type TransferQueueRef struct {
	Tenant string
	Name   string
}

// TransferQueue is a queue with its settings.
type TransferQueue struct {
	TransferQueueRef
	Namespace string
	Task      string
	Options   QueueOptions
	CreatedAt time.Time
}

// TransferPartition is a partition of a queue.
type TransferPartition struct {
	ID        string // its partitionId
	Name      string
	CreatedAt time.Time
}

// TransferMessage is one stored message.
type TransferMessage struct {
	Offset        int64 // at export only: its offset in its partition
	ID            string
	TransactionID string
	TraceID       string // "" for none
	ProducerSub   string // "" for none
	Payload       []byte // the stored JSON text (sealed when the queue encrypts)
	Sealed        Seal   // how Payload is sealed, copied with it
	CreatedAt     time.Time
}

// TransferGroup is a consumer group on one queue. At export, Cursors holds
// the cursor offset per partition id; at import, Consumed holds per
// partition id how many messages the group has consumed.
type TransferGroup struct {
	Name           string
	SubscribedFrom time.Time // zero: from the beginning
	CreatedAt      time.Time
	Cursors        map[string]int64
	Consumed       map[string]int64
}

// TransferDeadLetter is one dead letter of a message in one group.
type TransferDeadLetter struct {
	ID            int64 // at export only, for paging
	TransactionID string
	Group         string
	Error         string
	RetryCount    int
	FailedAt      time.Time
}

// TransferCounts are the rows a migration copies.
type TransferCounts struct {
	Queues, Partitions, Messages, ConsumerGroups, DeadLetters, KV   int64
	Timers, EphemeralQueues, StreamsQueries, StreamsState, Webhooks int64
}
