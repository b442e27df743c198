package lane

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/store"
)

// now is the clock of every test, in Unix milliseconds.
const now int64 = 1_700_000_000_000

const (
	lease = "lease-1"
	other = "lease-2"
)

// leased is a lane at cursor 10 holding a live lease over the batch 11..15.
func leased() State {
	return State{Cursor: 10, LeaseID: lease, LeaseExpiresAt: now + 30_000, BatchEnd: 15}
}

// withAttempts returns s with HeadAttempts set to n.
func withAttempts(s State, n int) State {
	s.HeadAttempts = n
	return s
}

// unleased is a lane at cursor 10 that holds no lease.
func unleased() State { return State{Cursor: 10} }

func completed(off int64, leaseID string) Ack {
	return Ack{Offset: off, LeaseID: leaseID, Status: store.AckCompleted}
}

func failed(off int64, leaseID, reason string) Ack {
	return Ack{Offset: off, LeaseID: leaseID, Status: store.AckFailed, Error: reason}
}

func retry(off int64, leaseID string) Ack {
	return Ack{Offset: off, LeaseID: leaseID, Status: store.AckRetry}
}

func dlq(off int64, leaseID, reason string) Ack {
	return Ack{Offset: off, LeaseID: leaseID, Status: store.AckDLQ, Error: reason}
}

// Verdict shorthands.
var (
	ok        = Verdict{Success: true}
	okRelease = Verdict{Success: true, LeaseReleased: true}
	dup       = Verdict{Success: true, Noop: true}
	committed = Verdict{Noop: true, Error: api.ReasonAlreadyCommitted}
	cancelled = Verdict{Noop: true, Error: api.ReasonCancelled}
	unresolv  = Verdict{Noop: true, Error: api.ReasonUnresolvable}
	badLease  = Verdict{Error: api.ReasonInvalidLease}
)

// released is s after its lease was dropped, with the cursor at cursor and
// the head attempts at attempts.
func released(cursor int64, attempts int) State {
	return State{Cursor: cursor, HeadAttempts: attempts}
}

func TestApply(t *testing.T) {
	tests := []struct {
		name       string
		state      State
		acks       []Ack
		retryLimit int
		want       []Verdict
		wantDead   []DeadLetter
		wantState  State
	}{
		// Positive commits.
		{
			name:      "completed inside the batch commits the gap and keeps the lease",
			state:     leased(),
			acks:      []Ack{completed(13, lease)},
			want:      []Verdict{ok},
			wantState: State{Cursor: 13, LeaseID: lease, LeaseExpiresAt: now + 30_000, BatchEnd: 15},
		},
		{
			name:      "completed of the batch end commits everything and releases the lease",
			state:     leased(),
			acks:      []Ack{completed(15, lease)},
			want:      []Verdict{okRelease},
			wantState: released(15, 0),
		},
		{
			name:      "only the ack that reaches the batch end reports the release",
			state:     leased(),
			acks:      []Ack{completed(12, lease), completed(15, lease), completed(14, lease)},
			want:      []Verdict{ok, okRelease, ok},
			wantState: released(15, 0),
		},
		{
			name:      "a repeat of an offset within the call is a noop success",
			state:     leased(),
			acks:      []Ack{completed(13, lease), completed(13, lease)},
			want:      []Verdict{ok, dup},
			wantState: State{Cursor: 13, LeaseID: lease, LeaseExpiresAt: now + 30_000, BatchEnd: 15},
		},
		{
			name:      "a commit that stops short of the batch end does not release",
			state:     leased(),
			acks:      []Ack{completed(14, lease)},
			want:      []Verdict{ok},
			wantState: State{Cursor: 14, LeaseID: lease, LeaseExpiresAt: now + 30_000, BatchEnd: 15},
		},
		{
			name:      "duplicate commit exactly at the cursor is success and noop",
			state:     unleased(),
			acks:      []Ack{completed(10, "")},
			want:      []Verdict{dup},
			wantState: unleased(),
		},
		{
			name:      "duplicate commit at the cursor of a leased lane changes nothing",
			state:     leased(),
			acks:      []Ack{completed(10, lease)},
			want:      []Verdict{dup},
			wantState: leased(),
		},
		{
			name:      "completed below the cursor is already committed",
			state:     leased(),
			acks:      []Ack{completed(7, lease)},
			want:      []Verdict{committed},
			wantState: leased(),
		},
		{
			name:      "failed at the cursor is already committed",
			state:     leased(),
			acks:      []Ack{failed(10, lease, "")},
			want:      []Verdict{committed},
			wantState: leased(),
		},
		{
			name:      "dlq below the cursor is already committed",
			state:     unleased(),
			acks:      []Ack{dlq(3, "", "x"), retry(9, "")},
			want:      []Verdict{committed, committed},
			wantState: unleased(),
		},
		{
			name:      "offset 0 is unresolvable",
			state:     leased(),
			acks:      []Ack{completed(0, lease), failed(0, lease, "")},
			want:      []Verdict{unresolv, unresolv},
			wantState: leased(),
		},

		// Lease checks.
		{
			name:      "a foreign lease id is rejected and changes nothing",
			state:     leased(),
			acks:      []Ack{completed(15, other), failed(11, other, "")},
			want:      []Verdict{badLease, badLease},
			wantState: leased(),
		},
		{
			name: "the right lease id past its deadline is rejected",
			state: State{Cursor: 10, LeaseID: lease, LeaseExpiresAt: now, // deadline == now is expired
				BatchEnd: 15},
			acks:      []Ack{completed(12, lease)},
			want:      []Verdict{badLease},
			wantState: State{Cursor: 10, LeaseID: lease, LeaseExpiresAt: now, BatchEnd: 15},
		},
		{
			name:      "a lease id on a lane that holds no lease is rejected",
			state:     unleased(),
			acks:      []Ack{completed(12, lease)},
			want:      []Verdict{badLease},
			wantState: unleased(),
		},
		{
			name:      "an ack without lease id is applied to a leased lane",
			state:     leased(),
			acks:      []Ack{completed(12, "")},
			want:      []Verdict{ok},
			wantState: State{Cursor: 12, LeaseID: lease, LeaseExpiresAt: now + 30_000, BatchEnd: 15},
		},
		{
			name:      "an ack without lease id reaching the batch end releases the lease",
			state:     leased(),
			acks:      []Ack{completed(15, "")},
			want:      []Verdict{okRelease},
			wantState: released(15, 0),
		},
		{
			name:      "an ack without lease id is applied to an unleased lane",
			state:     unleased(),
			acks:      []Ack{completed(20, "")},
			want:      []Verdict{ok},
			wantState: released(20, 0),
		},
		{
			name:      "a rejected negative ack does not clamp the others",
			state:     leased(),
			acks:      []Ack{failed(11, other, ""), completed(15, lease)},
			want:      []Verdict{badLease, okRelease},
			wantState: released(15, 0),
		},
		{
			name:      "lease check comes before resolution",
			state:     leased(),
			acks:      []Ack{completed(0, other)},
			want:      []Verdict{badLease},
			wantState: leased(),
		},

		// Clamping.
		{
			name:  "lowest negative ack wins and cancels everything above it",
			state: leased(),
			acks: []Ack{
				completed(11, lease), failed(13, lease, "boom"), completed(12, lease),
				completed(14, lease), retry(15, lease), dlq(14, lease, "x"),
			},
			retryLimit: 3,
			want:       []Verdict{ok, okRelease, ok, cancelled, cancelled, cancelled},
			wantState:  released(12, 1),
		},
		{
			name:       "a later negative ack at a lower offset wins",
			state:      leased(),
			acks:       []Ack{retry(14, lease), failed(12, lease, "")},
			retryLimit: 3,
			want:       []Verdict{cancelled, okRelease},
			wantState:  released(11, 1),
		},
		{
			name:       "completed at the offset of the winning negative ack is cancelled",
			state:      leased(),
			acks:       []Ack{completed(12, lease), retry(12, lease)},
			retryLimit: 3,
			want:       []Verdict{cancelled, okRelease},
			wantState:  released(11, 0),
		},
		{
			name:       "dlq beats failed and retry at the same offset",
			state:      leased(),
			acks:       []Ack{retry(12, lease), dlq(12, lease, "poison"), failed(12, lease, "")},
			retryLimit: 3,
			want:       []Verdict{cancelled, {Success: true, LeaseReleased: true, DLQ: true}, cancelled},
			wantDead:   []DeadLetter{{Offset: 12, Error: "poison", Attempts: 1}},
			wantState:  released(12, 0),
		},
		{
			name:       "failed beats retry at the same offset",
			state:      leased(),
			acks:       []Ack{retry(11, lease), failed(11, lease, "")},
			retryLimit: 3,
			want:       []Verdict{cancelled, okRelease},
			wantState:  released(10, 1),
		},
		{
			name:       "the first of two equal negative acks wins",
			state:      leased(),
			acks:       []Ack{failed(11, lease, "a"), failed(11, lease, "b")},
			retryLimit: 0,
			want:       []Verdict{{Success: true, LeaseReleased: true, DLQ: true}, cancelled},
			wantDead:   []DeadLetter{{Offset: 11, Error: "a", Attempts: 1}},
			wantState:  released(11, 0),
		},
		{
			name:       "a positive ack below the clamp still commits",
			state:      leased(),
			acks:       []Ack{completed(13, lease), retry(14, lease)},
			retryLimit: 3,
			want:       []Verdict{ok, okRelease},
			wantState:  released(13, 0),
		},

		// Failed acks and the retry budget.
		{
			name:       "failed of the head within budget counts an attempt and redelivers it",
			state:      withAttempts(leased(), 1),
			acks:       []Ack{failed(11, lease, "boom")},
			retryLimit: 3,
			want:       []Verdict{okRelease},
			wantState:  released(10, 2),
		},
		{
			name:       "failed further in the batch commits before it and counts its first attempt",
			state:      withAttempts(leased(), 2),
			acks:       []Ack{failed(14, lease, "")},
			retryLimit: 3,
			want:       []Verdict{okRelease},
			wantState:  released(13, 1),
		},
		{
			name:       "failed beyond budget dead-letters the message and moves past it",
			state:      withAttempts(leased(), 3),
			acks:       []Ack{failed(11, lease, "boom")},
			retryLimit: 3,
			want:       []Verdict{{Success: true, LeaseReleased: true, DLQ: true}},
			wantDead:   []DeadLetter{{Offset: 11, Error: "boom", Attempts: 4}},
			wantState:  released(11, 0),
		},
		{
			name:       "an exhausted failure without a reason uses the default text",
			state:      withAttempts(leased(), 3),
			acks:       []Ack{failed(11, lease, "")},
			retryLimit: 3,
			want:       []Verdict{{Success: true, LeaseReleased: true, DLQ: true}},
			wantDead:   []DeadLetter{{Offset: 11, Error: DefaultDLQError, Attempts: 4}},
			wantState:  released(11, 0),
		},
		{
			name:       "retryLimit 0 dead-letters on the first failure",
			state:      leased(),
			acks:       []Ack{failed(11, lease, "")},
			retryLimit: 0,
			want:       []Verdict{{Success: true, LeaseReleased: true, DLQ: true}},
			wantDead:   []DeadLetter{{Offset: 11, Error: DefaultDLQError, Attempts: 1}},
			wantState:  released(11, 0),
		},
		{
			name:       "dlq dead-letters at once whatever the budget",
			state:      leased(),
			acks:       []Ack{dlq(12, lease, "")},
			retryLimit: 10,
			want:       []Verdict{{Success: true, LeaseReleased: true, DLQ: true}},
			wantDead:   []DeadLetter{{Offset: 12, Error: DefaultDLQError, Attempts: 1}},
			wantState:  released(12, 0),
		},
		{
			name:       "dlq of the head counts its earlier attempts",
			state:      withAttempts(leased(), 2),
			acks:       []Ack{dlq(11, lease, "bad payload")},
			retryLimit: 10,
			want:       []Verdict{{Success: true, LeaseReleased: true, DLQ: true}},
			wantDead:   []DeadLetter{{Offset: 11, Error: "bad payload", Attempts: 3}},
			wantState:  released(11, 0),
		},
		{
			name:       "retry of the head keeps the budget",
			state:      withAttempts(leased(), 2),
			acks:       []Ack{retry(11, lease)},
			retryLimit: 3,
			want:       []Verdict{okRelease},
			wantState:  released(10, 2),
		},
		{
			name:       "retry at the limit never dead-letters",
			state:      withAttempts(leased(), 3),
			acks:       []Ack{retry(11, lease)},
			retryLimit: 3,
			want:       []Verdict{okRelease},
			wantState:  released(10, 3),
		},
		{
			name:       "retry further in the batch moves the cursor and resets the attempts",
			state:      withAttempts(leased(), 2),
			acks:       []Ack{retry(13, lease)},
			retryLimit: 3,
			want:       []Verdict{okRelease},
			wantState:  released(12, 0),
		},
		{
			name:       "a positive commit resets the head attempts",
			state:      withAttempts(leased(), 2),
			acks:       []Ack{completed(11, lease)},
			retryLimit: 3,
			want:       []Verdict{ok},
			wantState:  State{Cursor: 11, LeaseID: lease, LeaseExpiresAt: now + 30_000, BatchEnd: 15},
		},
		{
			name:       "a negative ack on an unleased lane reports no release",
			state:      unleased(),
			acks:       []Ack{failed(11, "", "")},
			retryLimit: 3,
			want:       []Verdict{ok},
			wantState:  released(10, 1),
		},
		{
			name:       "a negative ack without lease id releases a live lease",
			state:      leased(),
			acks:       []Ack{retry(11, "")},
			retryLimit: 3,
			want:       []Verdict{okRelease},
			wantState:  released(10, 0),
		},
		{
			name:       "no acks change nothing",
			state:      leased(),
			acks:       nil,
			retryLimit: 3,
			want:       []Verdict{},
			wantState:  leased(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := tt.state
			got, dead := Apply(&st, tt.acks, tt.retryLimit, now)
			if len(got) != len(tt.acks) {
				t.Fatalf("Apply returned %d verdicts for %d acks", len(got), len(tt.acks))
			}
			for i := range tt.want {
				if got[i] != tt.want[i] {
					t.Errorf("verdict %d (%s): got %+v, want %+v", i, describe(tt.acks[i]), got[i], tt.want[i])
				}
			}
			if !equalDead(dead, tt.wantDead) {
				t.Errorf("dead letters: got %+v, want %+v", dead, tt.wantDead)
			}
			if st != tt.wantState {
				t.Errorf("state: got %+v, want %+v", st, tt.wantState)
			}
		})
	}
}

func describe(a Ack) string {
	status := map[store.AckStatus]string{
		store.AckCompleted: "completed", store.AckRetry: "retry", store.AckFailed: "failed", store.AckDLQ: "dlq",
	}[a.Status]
	return fmt.Sprintf("%s@%d lease=%q", status, a.Offset, a.LeaseID)
}

func equalDead(got, want []DeadLetter) bool {
	if len(got) == 0 && len(want) == 0 {
		return true
	}
	return reflect.DeepEqual(got, want)
}

func TestApplyAfterReleaseIsNotReleasedAgain(t *testing.T) {
	st := leased()
	v, _ := Apply(&st, []Ack{completed(15, lease)}, 3, now)
	if !v[0].LeaseReleased {
		t.Fatalf("first ack of the batch end: got %+v, want LeaseReleased", v[0])
	}
	v, _ = Apply(&st, []Ack{completed(15, "")}, 3, now)
	if v[0] != dup {
		t.Errorf("re-ack of the batch end: got %+v, want %+v", v[0], dup)
	}
	// A retried ack whose answer was lost: its commit released the lease,
	// and the retry learns it succeeded rather than that the lease is bad.
	v, _ = Apply(&st, []Ack{completed(15, lease)}, 3, now)
	if v[0] != dup {
		t.Errorf("re-ack with the released lease: got %+v, want %+v", v[0], dup)
	}
	v, _ = Apply(&st, []Ack{completed(12, lease)}, 3, now)
	if v[0] != committed {
		t.Errorf("re-ack below the cursor with the released lease: got %+v, want %+v", v[0], committed)
	}
}

func TestExpireStale(t *testing.T) {
	stale := func(cursor int64, attempts int) State {
		return State{Cursor: cursor, HeadAttempts: attempts, LeaseID: lease, LeaseExpiresAt: now - 1, BatchEnd: cursor + 5}
	}
	tests := []struct {
		name       string
		state      State
		head       int64
		retryLimit int
		wantDead   *DeadLetter
		wantState  State
	}{
		{
			name:       "a live lease is left alone",
			state:      leased(),
			head:       11,
			retryLimit: 3,
			wantState:  leased(),
		},
		{
			name:       "a lane without lease is left alone",
			state:      withAttempts(unleased(), 2),
			head:       11,
			retryLimit: 3,
			wantState:  released(10, 2),
		},
		{
			name:       "an expired lease counts one attempt of the head and is released",
			state:      stale(10, 0),
			head:       11,
			retryLimit: 3,
			wantState:  released(10, 1),
		},
		{
			name:       "a lease expiring exactly now is stale",
			state:      State{Cursor: 10, LeaseID: lease, LeaseExpiresAt: now, BatchEnd: 12},
			head:       11,
			retryLimit: 3,
			wantState:  released(10, 1),
		},
		{
			name:       "an expired lease with no head message only releases",
			state:      stale(10, 2),
			head:       0,
			retryLimit: 3,
			wantState:  released(10, 2),
		},
		{
			name:       "an expiry that exhausts the budget dead-letters the head",
			state:      stale(10, 3),
			head:       11,
			retryLimit: 3,
			wantDead:   &DeadLetter{Offset: 11, Error: ExpiredLeaseError, Attempts: 4},
			wantState:  released(11, 0),
		},
		{
			name:       "retryLimit 0 dead-letters on the first expiry",
			state:      stale(10, 0),
			head:       11,
			retryLimit: 0,
			wantDead:   &DeadLetter{Offset: 11, Error: ExpiredLeaseError, Attempts: 1},
			wantState:  released(11, 0),
		},
		{
			name:       "a dead-lettered head behind a gap moves the cursor onto it",
			state:      stale(3, 1),
			head:       7,
			retryLimit: 1,
			wantDead:   &DeadLetter{Offset: 7, Error: ExpiredLeaseError, Attempts: 2},
			wantState:  released(7, 0),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := tt.state
			dead := st.ExpireStale(now, tt.head, tt.retryLimit)
			if !reflect.DeepEqual(dead, tt.wantDead) {
				t.Errorf("dead letter: got %+v, want %+v", dead, tt.wantDead)
			}
			if st.LeaseID != tt.wantState.LeaseID || st.HeadAttempts != tt.wantState.HeadAttempts ||
				st.LeaseExpiresAt != tt.wantState.LeaseExpiresAt || st.BatchEnd != tt.wantState.BatchEnd {
				t.Errorf("state: got %+v, want %+v", st, tt.wantState)
			}
			// The cursor may move up to just before the head (nothing lies
			// between), but never onto or past it unless it was dead-lettered.
			if tt.wantDead == nil && (st.Cursor < tt.wantState.Cursor || (tt.head != 0 && st.Cursor >= tt.head)) {
				t.Errorf("cursor: got %d, want in [%d, %d)", st.Cursor, tt.wantState.Cursor, tt.head)
			}
			if tt.wantDead != nil && st.Cursor != tt.wantState.Cursor {
				t.Errorf("cursor: got %d, want %d", st.Cursor, tt.wantState.Cursor)
			}
		})
	}
}

// deliveries runs the life of one poison message at offset head on a lane
// whose cursor is at cursor, alternating the given failure modes, and
// returns how many times it was delivered before it was dead-lettered and the
// DLQ row.
func deliveries(t *testing.T, cursor, head int64, retryLimit int, modes []string) (int, DeadLetter) {
	t.Helper()
	st := State{Cursor: cursor}
	clock := now
	for n := 1; n <= 100; n++ {
		clock += 1000
		leaseID := fmt.Sprintf("lease-%d", n)
		// A pop: settle an expired lease, then claim the head again.
		if dl := st.ExpireStale(clock, head, retryLimit); dl != nil {
			return n - 1, *dl
		}
		if st.Cursor >= head {
			t.Fatalf("delivery %d: cursor %d moved past the head %d without a DLQ row", n, st.Cursor, head)
		}
		st.Claim(leaseID, clock+500, head)
		switch mode := modes[(n-1)%len(modes)]; mode {
		case "failed":
			v, dead := Apply(&st, []Ack{failed(head, leaseID, "boom")}, retryLimit, clock)
			if !v[0].Success {
				t.Fatalf("delivery %d: failed ack got %+v", n, v[0])
			}
			if len(dead) > 0 {
				return n, dead[0]
			}
		case "retry":
			v, dead := Apply(&st, []Ack{retry(head, leaseID)}, retryLimit, clock)
			if !v[0].Success || len(dead) > 0 {
				t.Fatalf("delivery %d: retry ack got %+v, dead %+v", n, v[0], dead)
			}
		case "expire":
			clock += 1000 // let the lease lapse; the next pop settles it
		default:
			t.Fatalf("unknown mode %q", mode)
		}
	}
	t.Fatalf("message was never dead-lettered")
	return 0, DeadLetter{}
}

func TestRetryBudget(t *testing.T) {
	tests := []struct {
		name         string
		cursor, head int64
		retryLimit   int
		modes        []string
		want         int // deliveries
		wantError    string
	}{
		{"failed acks", 0, 1, 3, []string{"failed"}, 4, "boom"},
		{"lease expiries", 0, 1, 3, []string{"expire"}, 4, ExpiredLeaseError},
		{"retryLimit 0 with a failed ack", 0, 1, 0, []string{"failed"}, 1, "boom"},
		{"retryLimit 0 with an expiry", 0, 1, 0, []string{"expire"}, 1, ExpiredLeaseError},
		{"retries do not count", 0, 1, 2, []string{"retry", "failed"}, 6, "boom"},
		{"expiries then a failed ack", 0, 1, 2, []string{"expire", "expire", "failed"}, 3, "boom"},
		// Offsets may have gaps (the SQLite driver numbers messages across
		// partitions): the head is still the same message, so the attempts
		// counted by lease expiries must survive the failed ack.
		{"expiries then a failed ack behind a gap", 3, 7, 2, []string{"expire", "expire", "failed"}, 3, "boom"},
		{"expiry then failed acks behind a gap", 3, 7, 2, []string{"expire", "failed"}, 3, ExpiredLeaseError},
		{"failed acks behind a gap", 3, 7, 3, []string{"failed"}, 4, "boom"},
		{"lease expiries behind a gap", 3, 7, 3, []string{"expire"}, 4, ExpiredLeaseError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, dl := deliveries(t, tt.cursor, tt.head, tt.retryLimit, tt.modes)
			if n != tt.want {
				t.Errorf("delivered %d times, want %d (retryLimit %d)", n, tt.want, tt.retryLimit)
			}
			if dl.Offset != tt.head || dl.Error != tt.wantError {
				t.Errorf("dead letter: got %+v, want offset %d error %q", dl, tt.head, tt.wantError)
			}
			failures := tt.want
			for i := 0; i < tt.want; i++ {
				if tt.modes[i%len(tt.modes)] == "retry" {
					failures--
				}
			}
			if dl.Attempts != failures {
				t.Errorf("dead letter attempts: got %d, want %d", dl.Attempts, failures)
			}
		})
	}
}

func TestLeasedAndStale(t *testing.T) {
	tests := []struct {
		name          string
		state         State
		leased, stale bool
	}{
		{"no lease", State{}, false, false},
		{"live", State{LeaseID: lease, LeaseExpiresAt: now + 1}, true, false},
		{"deadline now", State{LeaseID: lease, LeaseExpiresAt: now}, false, true},
		{"expired", State{LeaseID: lease, LeaseExpiresAt: now - 1}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.state.Leased(now); got != tt.leased {
				t.Errorf("Leased: got %v, want %v", got, tt.leased)
			}
			if got := tt.state.Stale(now); got != tt.stale {
				t.Errorf("Stale: got %v, want %v", got, tt.stale)
			}
		})
	}
}
