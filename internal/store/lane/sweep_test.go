package lane

import (
	"reflect"
	"testing"
)

func TestDrop(t *testing.T) {
	tests := []struct {
		name      string
		state     State
		through   int64
		want      State
		wantMoved bool
	}{
		{"below the cursor changes nothing", unleased(), 7, unleased(), false},
		{"at the cursor changes nothing", unleased(), 10, unleased(), false},
		{"past the cursor moves it and forgets the head's attempts",
			withAttempts(unleased(), 2), 12, State{Cursor: 12}, true},
		{"a pending retry delay goes with its head",
			State{Cursor: 10, RetryAt: now + 5000}, 11, State{Cursor: 11}, true},
		{"a lease whose whole batch is gone is released", leased(), 15, State{Cursor: 15}, true},
		{"a lease holding later messages is kept", leased(), 12,
			State{Cursor: 12, LeaseID: lease, LeaseExpiresAt: now + 30_000, BatchEnd: 15}, true},
		{"a stale lease whose batch is gone is released too",
			State{Cursor: 10, LeaseID: lease, LeaseExpiresAt: now - 1, BatchEnd: 15, HeadAttempts: 1}, 20,
			State{Cursor: 20}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := tt.state
			if moved := st.Drop(tt.through); moved != tt.wantMoved {
				t.Errorf("Drop reported %v, want %v", moved, tt.wantMoved)
			}
			if st != tt.want {
				t.Errorf("state: got %+v, want %+v", st, tt.want)
			}
		})
	}
}

func TestEvict(t *testing.T) {
	tests := []struct {
		name     string
		state    State
		offsets  []int64
		want     State
		wantDead []DeadLetter
	}{
		{"nothing to evict", unleased(), nil, unleased(), nil},
		{"a live lease keeps the lane", leased(), []int64{11, 12}, leased(), nil},
		{"an unleased lane moves past the evicted messages, the head keeps its attempts",
			withAttempts(unleased(), 2), []int64{11, 14, 20}, State{Cursor: 20},
			[]DeadLetter{{Offset: 11, Error: MaxWaitError, Attempts: 2},
				{Offset: 14, Error: MaxWaitError}, {Offset: 20, Error: MaxWaitError}}},
		{"a stale lease is dropped with its messages",
			State{Cursor: 10, LeaseID: lease, LeaseExpiresAt: now - 1, BatchEnd: 12}, []int64{11, 12},
			State{Cursor: 12}, []DeadLetter{{Offset: 11, Error: MaxWaitError}, {Offset: 12, Error: MaxWaitError}}},
		{"a lane waiting out a retry delay is evicted", State{Cursor: 10, RetryAt: now + 1000, HeadAttempts: 1},
			[]int64{11}, State{Cursor: 11}, []DeadLetter{{Offset: 11, Error: MaxWaitError, Attempts: 1}}},
		{"offsets at or below the cursor are not dead-lettered", unleased(), []int64{9, 10, 11},
			State{Cursor: 11}, []DeadLetter{{Offset: 11, Error: MaxWaitError}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := tt.state
			dead := st.Evict(tt.offsets, now)
			if !equalDead(dead, tt.wantDead) {
				t.Errorf("dead letters: got %+v, want %+v", dead, tt.wantDead)
			}
			if st != tt.want {
				t.Errorf("state: got %+v, want %+v", st, tt.want)
			}
		})
	}
}

func TestApplyPolicyRetryDelay(t *testing.T) {
	const delay = 1500
	p := Policy{RetryLimit: 3, RetryDelayMs: delay}
	tests := []struct {
		name        string
		state       State
		acks        []Ack
		policy      Policy
		wantRetryAt int64
		wantCursor  int64
	}{
		{"a failed ack delays the head", leased(), []Ack{failed(11, lease, "boom")}, p, now + delay, 10},
		{"a retry ack delays the head", leased(), []Ack{retry(11, lease)}, p, now + delay, 10},
		{"a negative ack after commits delays the new head",
			leased(), []Ack{completed(11, lease), completed(12, lease), failed(13, lease, "")}, p, now + delay, 12},
		{"no delay configured redelivers at once", leased(), []Ack{failed(11, lease, "boom")},
			Policy{RetryLimit: 3}, 0, 10},
		{"a failed ack that dead-letters moves on without delay",
			withAttempts(leased(), 3), []Ack{failed(11, lease, "boom")}, p, 0, 11},
		{"a dlq ack moves on without delay", leased(), []Ack{dlq(11, lease, "bad")}, p, 0, 11},
		{"completed acks set no delay", leased(), []Ack{completed(15, lease)}, p, 0, 15},
		{"an ack with a foreign lease sets no delay", leased(), []Ack{failed(11, other, "")}, p, 0, 10},
		{"an ack already committed sets no delay", leased(), []Ack{failed(9, lease, "")}, p, 0, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := tt.state
			want := tt.state
			wantV, wantDead := Apply(&want, tt.acks, tt.policy.RetryLimit, now)
			gotV, gotDead := ApplyPolicy(&st, tt.acks, tt.policy, now)
			if !reflect.DeepEqual(gotV, wantV) || !equalDead(gotDead, wantDead) {
				t.Errorf("verdicts %+v dead %+v, want those of Apply: %+v %+v", gotV, gotDead, wantV, wantDead)
			}
			if st.RetryAt != tt.wantRetryAt || st.Cursor != tt.wantCursor {
				t.Errorf("state %+v: want RetryAt %d and cursor %d", st, tt.wantRetryAt, tt.wantCursor)
			}
			if tt.wantRetryAt > 0 {
				if st.Available(now + delay - 1) {
					t.Errorf("available %d ms before the delay ends", 1)
				}
				if !st.Available(now + delay) {
					t.Errorf("not available once the delay has passed")
				}
			}
		})
	}
}

func TestRetryDelayClearedByClaimAndCommit(t *testing.T) {
	st := State{Cursor: 10, RetryAt: now + 1000}
	st.Claim(lease, now+2000, 12)
	if st.RetryAt != 0 {
		t.Errorf("Claim kept RetryAt %d", st.RetryAt)
	}
	st = State{Cursor: 10, RetryAt: now + 1000}
	st.Commit(10)
	if st.RetryAt == 0 {
		t.Errorf("Commit without a move cleared RetryAt")
	}
	st.Commit(11)
	if st.RetryAt != 0 {
		t.Errorf("Commit to a new head kept RetryAt %d", st.RetryAt)
	}
}

// EvictPartition: every unleased lane evicts what it has not passed, within
// one budget for the partition; the floor moves past what all of them
// passed, and a message dead-lettered by two groups counts once.
func TestEvictPartition(t *testing.T) {
	const now = 1000
	offs := []int64{3, 4, 5, 6}
	t.Run("two lanes, one behind the other", func(t *testing.T) {
		a, b := &State{Cursor: 2}, &State{Cursor: 4}
		ev := EvictPartition([]*State{a, b}, 2, offs, 100, false, now)
		if len(ev.Dead[0]) != 4 || len(ev.Dead[1]) != 2 || ev.Used != 6 {
			t.Fatalf("dead letters %d and %d (used %d), want 4 and 2", len(ev.Dead[0]), len(ev.Dead[1]), ev.Used)
		}
		if ev.Floor != 6 || ev.Evicted != 4 || ev.More || ev.Skip {
			t.Fatalf("floor %d evicted %d more %v skip %v, want 6, 4 (each message once), false, false", ev.Floor, ev.Evicted, ev.More, ev.Skip)
		}
		if a.Cursor != 6 || b.Cursor != 6 {
			t.Fatalf("cursors %d and %d, want both past the evicted messages (6)", a.Cursor, b.Cursor)
		}
	})
	t.Run("the budget runs out", func(t *testing.T) {
		a, b := &State{Cursor: 2}, &State{Cursor: 2}
		ev := EvictPartition([]*State{a, b}, 2, offs, 5, false, now)
		if ev.Used != 5 || ev.Floor != 3 || !ev.More || ev.Evicted != 1 {
			t.Fatalf("used %d floor %d more %v evicted %d, want 5, 3 (the second lane stopped at 3), true, 1", ev.Used, ev.Floor, ev.More, ev.Evicted)
		}
	})
	t.Run("a leased lane is left alone", func(t *testing.T) {
		leased := &State{Cursor: 2, LeaseID: "l", LeaseExpiresAt: now + 1, BatchEnd: 3}
		free := &State{Cursor: 2}
		ev := EvictPartition([]*State{leased, free}, 2, offs, 100, false, now)
		if ev.Dead[0] != nil || leased.Cursor != 2 || len(ev.Dead[1]) != 4 || ev.Floor != 6 {
			t.Fatalf("leased lane dead %d cursor %d; free lane dead %d; floor %d", len(ev.Dead[0]), leased.Cursor, len(ev.Dead[1]), ev.Floor)
		}
		ev = EvictPartition([]*State{leased}, 2, offs, 100, false, now)
		if !ev.Skip {
			t.Fatal("every lane leased: the step must skip the partition")
		}
	})
}

func TestExpiryTakesOnlyTheExpiredHead(t *testing.T) {
	e := NewExpiry(10, 20_000) // cutoff 10 s
	for _, m := range []struct {
		seq, created int64
		want         bool
	}{{1, 5_000, true}, {2, 9_999, true}, {3, 10_000, false}, {4, 1_000, false}} {
		if got := e.Expired(m.seq, m.created); got != m.want {
			t.Errorf("message %d created at %d: expired %v, want %v", m.seq, m.created, got, m.want)
		}
	}
	if !e.Ended() || len(e.Offsets) != 2 || e.Offsets[1] != 2 {
		t.Errorf("offsets %v ended %v, want [1 2] ended", e.Offsets, e.Ended())
	}
	off := NewExpiry(0, 20_000)
	if off.Expired(1, 0) || !off.Ended() {
		t.Error("without maxWaitTimeSeconds a message expired")
	}
}
