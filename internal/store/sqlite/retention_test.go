package sqlite_test

import (
	"context"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/store/sqlite"
	"github.com/queen-go/queen/internal/store/storetest"
)

// Offsets continue above every offset ever handed out after a restart, even
// when retention deleted the newest rows of the table: the counter starts
// from the partitions' last offsets, not from the rows left.
func TestOffsetsAfterReopen(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	storetest.Configure(t, st, "q", storetest.Options(func(o *store.QueueOptions) {
		o.RetentionEnabled, o.RetentionSeconds = true, 60
	}))
	storetest.PushAt(t, st, storetest.At(0), "q", "p", 5)
	p := storetest.PopParams("q", store.QueueMode, storetest.At(time.Second))
	p.Batch, p.AutoAck, p.LeaseID = 5, true, ""
	if n := len(storetest.Pop(t, st, p)); n != 5 {
		t.Fatalf("popped %d, want 5", n)
	}
	if n := storetest.Sweep(t, st, store.RetentionExpired, storetest.At(time.Hour), 100); n != 5 {
		t.Fatalf("retention removed %d, want 5", n)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, err = sqlite.Open(ctx, sqlite.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	next := storetest.PushAt(t, st, storetest.At(2*time.Hour), "q", "p", 1)
	got := storetest.Pop(t, st, storetest.PopParams("q", store.QueueMode, storetest.At(2*time.Hour)))
	if len(got) != 1 || got[0].ID != next[0].MessageID {
		t.Fatalf("after a restart: popped %v, want the new message", got)
	}
}
