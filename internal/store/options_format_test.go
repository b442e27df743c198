package store

import (
	"reflect"
	"testing"
)

// TestDecodeQueueOptionsFixtures reads options exactly as earlier brokers
// stored them: a renamed Go field must not change what these decode to.
func TestDecodeQueueOptionsFixtures(t *testing.T) {
	want := QueueOptions{
		CompletedRetentionSeconds: 7, DeadLetterQueue: true, DelayedProcessing: 2, DLQAfterMaxRetries: true,
		LeaseTime: 30, MaxSize: 1000, MaxWaitTimeSeconds: 60, Priority: 5, RetentionEnabled: true,
		RetentionSeconds: 86400, RetryDelay: 250, RetryLimit: 4, TTL: 3600, WindowBuffer: 3,
	}
	fixtures := map[string]string{
		// Written before the format had a version (the JSON of QueueOptions).
		"unversioned": `{"completedRetentionSeconds":7,"deadLetterQueue":true,"delayedProcessing":2,` +
			`"dlqAfterMaxRetries":true,"encryptionEnabled":false,"leaseTime":30,"maxSize":1000,` +
			`"maxWaitTimeSeconds":60,"priority":5,"retentionEnabled":true,"retentionSeconds":86400,` +
			`"retryDelay":250,"retryLimit":4,"ttl":3600,"windowBuffer":3}`,
		"v1": `{"v":1,"completedRetentionSeconds":7,"deadLetterQueue":true,"delayedProcessing":2,` +
			`"dlqAfterMaxRetries":true,"encryptionEnabled":false,"leaseTime":30,"maxSize":1000,` +
			`"maxWaitTimeSeconds":60,"priority":5,"retentionEnabled":true,"retentionSeconds":86400,` +
			`"retryDelay":250,"retryLimit":4,"ttl":3600,"windowBuffer":3}`,
	}
	for name, stored := range fixtures {
		got, err := DecodeQueueOptions([]byte(stored))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: decoded %+v, want %+v", name, got, want)
		}
	}
	if got := string(EncodeQueueOptions(want)); got != fixtures["v1"] {
		t.Errorf("EncodeQueueOptions changed the stored format:\n got %s\nwant %s", got, fixtures["v1"])
	}
	if _, err := DecodeQueueOptions([]byte(`{"v":2}`)); err == nil {
		t.Error("a newer format version decoded without error")
	}
}
