package store

import "testing"

func TestRetryTransactionID(t *testing.T) {
	for _, tc := range []struct {
		txn  string
		n    int
		want string
	}{
		{"order-1", 1, "order-1:retry:1"},
		{"order-1", 3, "order-1:retry:3"},
		{"order-1:retry:1", 1, "order-1:retry:2"},
		{"order-1:retry:9", 2, "order-1:retry:11"},
		{"a:retry:b", 1, "a:retry:b:retry:1"},
		{"a:retry:", 1, "a:retry::retry:1"},
		{"a:retry:01", 1, "a:retry:01:retry:1"},
		{"a:retry:1234567890", 1, "a:retry:1234567890:retry:1"},
	} {
		if got := RetryTransactionID(tc.txn, tc.n); got != tc.want {
			t.Errorf("RetryTransactionID(%q, %d) = %q, want %q", tc.txn, tc.n, got, tc.want)
		}
	}
}

func TestQueueModeSummaryType(t *testing.T) {
	for m, want := range map[QueueModeSummary]string{
		{}:                                 "none",
		{HasQueueMode: true}:               "queue",
		{BusGroups: 2}:                     "bus",
		{HasQueueMode: true, BusGroups: 1}: "hybrid",
	} {
		if got := m.Type(); got != want {
			t.Errorf("%+v: %q, want %q", m, got, want)
		}
	}
}
