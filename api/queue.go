package api

// Configuring and deleting queues.

// ConfigureRequest is the body of POST /api/v1/configure. It creates the
// queue or fully replaces its configuration.
type ConfigureRequest struct {
	// Queue is required.
	Queue     string `json:"queue"`
	Namespace string `json:"namespace,omitempty"`
	Task      string `json:"task,omitempty"`
	// Options replace the queue's options entirely: an option left out is
	// reset to its default, and nil (or null) sets every option to its
	// default.
	Options *QueueOptions `json:"options,omitempty"`
}

// QueueOptions are a queue's options, as configure takes and echoes them.
// The zero value is not the default (DefaultQueueOptions). The broker's
// documentation describes each option.
type QueueOptions struct {
	// CompletedRetentionSeconds, with RetentionEnabled, deletes messages
	// every group has consumed once they are this old (0: never).
	CompletedRetentionSeconds int `json:"completedRetentionSeconds"`
	// DeadLetterQueue is stored and echoed, never applied.
	DeadLetterQueue bool `json:"deadLetterQueue"`
	// DelayedProcessing hides a message for this many seconds after its
	// push.
	DelayedProcessing int `json:"delayedProcessing"`
	// DLQAfterMaxRetries is stored and echoed, never applied.
	DLQAfterMaxRetries bool `json:"dlqAfterMaxRetries"`
	// EncryptionEnabled stores payloads encrypted; the broker needs a key.
	EncryptionEnabled bool `json:"encryptionEnabled"`
	// LeaseTime is how long a pop's lease lasts, in seconds; 0 means 60.
	LeaseTime int `json:"leaseTime"`
	// MaxSize caps the unconsumed messages the queue holds (0: no cap).
	MaxSize int `json:"maxSize"`
	// MaxWaitTimeSeconds dead-letters messages not consumed within this
	// time (0: never).
	MaxWaitTimeSeconds int `json:"maxWaitTimeSeconds"`
	// Priority orders queues for namespace and task pops, higher first.
	Priority int `json:"priority"`
	// RetentionEnabled turns RetentionSeconds and
	// CompletedRetentionSeconds on.
	RetentionEnabled bool `json:"retentionEnabled"`
	// RetentionSeconds, with RetentionEnabled, deletes messages older than
	// this whatever their state (0: never).
	RetentionSeconds int `json:"retentionSeconds"`
	// RetryDelay holds a redelivery back this many milliseconds after a
	// negative ack.
	RetryDelay int `json:"retryDelay"`
	// RetryLimit is how many failed deliveries send a message to the
	// dead-letter queue.
	RetryLimit int `json:"retryLimit"`
	// TTL is stored and echoed, never applied.
	TTL int `json:"ttl"`
	// WindowBuffer holds a partition back until its newest message is this
	// many seconds old.
	WindowBuffer int `json:"windowBuffer"`
}

// DefaultQueueOptions returns the options of a queue created by its first
// push, and those configure resets an option left out to: leaseTime 300,
// retryLimit 3, ttl 3600, every other option zero or false.
func DefaultQueueOptions() QueueOptions {
	return QueueOptions{LeaseTime: 300, RetryLimit: 3, TTL: 3600}
}

// ConfigureResponse is configure's answer (200): the queue's whole
// configuration.
type ConfigureResponse struct {
	Configured bool   `json:"configured"`
	QueueID    string `json:"queueId"`
	// PartitionID is the queue's default partition's.
	PartitionID string       `json:"partitionId"`
	Queue       string       `json:"queue"`
	Namespace   string       `json:"namespace"`
	Task        string       `json:"task"`
	Options     QueueOptions `json:"options"`
}

// QueueDeleteResponse answers DELETE /api/v1/resources/queues/{queue}: 200
// whether or not the queue existed, since clients delete before they
// create.
type QueueDeleteResponse struct {
	Deleted bool   `json:"deleted"`
	Queue   string `json:"queue"`
	// Message says the queue did not exist ("Queue 'q' not found").
	Message string `json:"message,omitempty"`
}
