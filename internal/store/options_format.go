package store

import (
	"encoding/json"
	"fmt"
)

// The stored format of queue options is defined here, apart from the Go type
// and from the wire format, so that renaming a field of QueueOptions can
// never change what the database holds or make old rows unreadable. Both
// engines store the bytes EncodeQueueOptions returns.
//
// Version 1 is a JSON object with the keys below and "v":1. Rows written
// before the format had a version carry the same keys without "v" and read
// as version 1.

// queueOptionsFormat is the current version of the stored format.
const queueOptionsFormat = 1

// storedQueueOptionsV1 is version 1 of the stored format. Its keys are
// frozen: add a version rather than rename one.
type storedQueueOptionsV1 struct {
	V                         int  `json:"v"`
	CompletedRetentionSeconds int  `json:"completedRetentionSeconds"`
	DeadLetterQueue           bool `json:"deadLetterQueue"`
	DelayedProcessing         int  `json:"delayedProcessing"`
	DLQAfterMaxRetries        bool `json:"dlqAfterMaxRetries"`
	EncryptionEnabled         bool `json:"encryptionEnabled"`
	LeaseTime                 int  `json:"leaseTime"`
	MaxSize                   int  `json:"maxSize"`
	MaxWaitTimeSeconds        int  `json:"maxWaitTimeSeconds"`
	Priority                  int  `json:"priority"`
	RetentionEnabled          bool `json:"retentionEnabled"`
	RetentionSeconds          int  `json:"retentionSeconds"`
	RetryDelay                int  `json:"retryDelay"`
	RetryLimit                int  `json:"retryLimit"`
	TTL                       int  `json:"ttl"`
	WindowBuffer              int  `json:"windowBuffer"`
}

// EncodeQueueOptions returns the stored form of o.
func EncodeQueueOptions(o QueueOptions) []byte {
	b, err := json.Marshal(storedQueueOptionsV1{
		V:                         queueOptionsFormat,
		CompletedRetentionSeconds: o.CompletedRetentionSeconds,
		DeadLetterQueue:           o.DeadLetterQueue,
		DelayedProcessing:         o.DelayedProcessing,
		DLQAfterMaxRetries:        o.DLQAfterMaxRetries,
		EncryptionEnabled:         o.EncryptionEnabled,
		LeaseTime:                 o.LeaseTime,
		MaxSize:                   o.MaxSize,
		MaxWaitTimeSeconds:        o.MaxWaitTimeSeconds,
		Priority:                  o.Priority,
		RetentionEnabled:          o.RetentionEnabled,
		RetentionSeconds:          o.RetentionSeconds,
		RetryDelay:                o.RetryDelay,
		RetryLimit:                o.RetryLimit,
		TTL:                       o.TTL,
		WindowBuffer:              o.WindowBuffer,
	})
	if err != nil {
		panic(err) // a struct of ints and bools always encodes
	}
	return b
}

// DecodeQueueOptions reads options stored by any version of the broker up to
// this one.
func DecodeQueueOptions(b []byte) (QueueOptions, error) {
	var s storedQueueOptionsV1
	if err := json.Unmarshal(b, &s); err != nil {
		return QueueOptions{}, fmt.Errorf("stored queue options: %w", err)
	}
	if s.V > queueOptionsFormat {
		return QueueOptions{}, fmt.Errorf("stored queue options: format version %d was written by a newer broker", s.V)
	}
	return QueueOptions{
		CompletedRetentionSeconds: s.CompletedRetentionSeconds,
		DeadLetterQueue:           s.DeadLetterQueue,
		DelayedProcessing:         s.DelayedProcessing,
		DLQAfterMaxRetries:        s.DLQAfterMaxRetries,
		EncryptionEnabled:         s.EncryptionEnabled,
		LeaseTime:                 s.LeaseTime,
		MaxSize:                   s.MaxSize,
		MaxWaitTimeSeconds:        s.MaxWaitTimeSeconds,
		Priority:                  s.Priority,
		RetentionEnabled:          s.RetentionEnabled,
		RetentionSeconds:          s.RetentionSeconds,
		RetryDelay:                s.RetryDelay,
		RetryLimit:                s.RetryLimit,
		TTL:                       s.TTL,
		WindowBuffer:              s.WindowBuffer,
	}, nil
}
