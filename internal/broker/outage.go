package broker

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/spool"
	"github.com/queen-go/queen/internal/store"
)

// Spooler is the disk buffer the broker writes pushes to when the store
// cannot take them (package spool implements it).
type Spooler interface {
	Append(items []store.PushItem) error
	DeadLetterPath() string
	DeadLettered() int64
	Pending() int64
	PendingIn(keys []spool.PartitionKey) bool
	Replay(ctx context.Context, batch int,
		push func(ctx context.Context, items []store.PushItem) (refused []spool.Refusal, err error)) (int, error)
	WaitClear(ctx context.Context, keys []spool.PartitionKey) error
}

// replayBatch is how many spooled items one replayed push carries: large,
// so that replay catches up quickly.
const replayBatch = 1000

// spoolWaitMax bounds how long a fresh push waits for the spooled items of
// its partitions to be replayed before it is spooled behind them instead.
const spoolWaitMax = 10 * time.Second

// MaintenanceStatus is what the maintenance and buffer routes report.
type MaintenanceStatus struct {
	Buffered       int64 // spooled pushes waiting for replay
	BufferHealthy  bool
	DBHealthy      bool
	DeadLettered   int64 // spooled pushes the database refused, set aside
	Maintenance    bool
	PopMaintenance bool
}

// Maintenance reports the maintenance flags and the spool.
func (b *Broker) Maintenance() MaintenanceStatus {
	st := MaintenanceStatus{
		Maintenance:    b.maintenance.Load(),
		PopMaintenance: b.popMaintenance.Load(),
		DBHealthy:      !b.dbDown.Load(),
		BufferHealthy:  b.spool != nil && !b.spoolBroken.Load(),
	}
	if b.spool != nil {
		st.Buffered = b.spool.Pending()
		st.DeadLettered = b.spool.DeadLettered()
	}
	return st
}

// Keys of the maintenance settings in the store, shared by every broker.
const (
	settingMaintenance    = "maintenance_mode"
	settingPopMaintenance = "pop_maintenance_mode"
)

// settingsEvery is how often the settings service re-reads the shared
// settings, so that a mode switched on one broker reaches the others.
const settingsEvery = time.Second

// SetMaintenance turns push maintenance on or off for every broker on the
// store: while on, every push goes to the spool; when turned off, the spool
// is replayed. The setting is stored first, so an error changes nothing.
func (b *Broker) SetMaintenance(ctx context.Context, on bool) error {
	if err := b.store.SettingSet(ctx, &store.SettingSetParams{Key: settingMaintenance, Value: strconv.FormatBool(on), Now: b.now()}); err != nil {
		return err
	}
	b.settingsMu.Lock()
	b.settingsGen++ // a refresh that read before this write must not undo it
	b.applyMaintenance(on)
	b.settingsMu.Unlock()
	return nil
}

// SetPopMaintenance turns pop maintenance on or off for every broker on the
// store: while on, every pop answers empty at once.
func (b *Broker) SetPopMaintenance(ctx context.Context, on bool) error {
	if err := b.store.SettingSet(ctx, &store.SettingSetParams{Key: settingPopMaintenance, Value: strconv.FormatBool(on), Now: b.now()}); err != nil {
		return err
	}
	b.settingsMu.Lock()
	b.settingsGen++
	b.applyPopMaintenance(on)
	b.settingsMu.Unlock()
	return nil
}

func (b *Broker) applyMaintenance(on bool) {
	if b.maintenance.Swap(on) != on {
		b.log.Info("push maintenance mode changed", "enabled", on)
		b.kickRecovery()
	}
}

func (b *Broker) applyPopMaintenance(on bool) {
	if b.popMaintenance.Swap(on) != on {
		b.log.Info("pop maintenance mode changed", "enabled", on)
	}
}

// refreshSettings adopts the maintenance modes stored by any broker. While
// the store is unreachable the current modes stay. A value read before this
// broker set the mode itself is dropped: applied after the set, it would
// undo it until the next refresh (seen: maintenance switched on, then off
// again for up to a second, letting pushes through).
func (b *Broker) refreshSettings(ctx context.Context) {
	for key, apply := range map[string]func(bool){
		settingMaintenance:    b.applyMaintenance,
		settingPopMaintenance: b.applyPopMaintenance,
	} {
		b.settingsMu.Lock()
		gen := b.settingsGen
		b.settingsMu.Unlock()
		v, err := b.store.SettingGet(ctx, &store.SettingGetParams{Key: key})
		if err != nil {
			return
		}
		b.settingsMu.Lock()
		if b.settingsGen == gen {
			apply(v == "true")
		}
		b.settingsMu.Unlock()
	}
}

// spooling reports whether pushes must go to the spool now: in maintenance
// and while the database is down. Once it answers again, fresh pushes go
// straight to it (see behindSpool).
func (b *Broker) spooling() bool {
	return b.spool != nil && (b.maintenance.Load() || b.dbDown.Load())
}

// behindSpool keeps each partition in order after an outage: items of a
// partition that still has spooled pushes must not overtake them. It waits
// (kicking the replay) until those partitions are replayed and reports
// false; it reports true when the items must be spooled behind them instead,
// because the database went down again, maintenance began, or the replay did
// not reach them within spoolWaitMax. Partitions without spooled pushes never
// wait, so a backlog on some partitions holds up no others.
func (b *Broker) behindSpool(ctx context.Context, items []store.PushItem) bool {
	if b.spool == nil || b.spool.Pending() == 0 {
		return false
	}
	keys := make([]spool.PartitionKey, 0, 1)
	for i := range items {
		k := spool.PartitionKey{Tenant: items[i].Tenant, Queue: items[i].Queue, Partition: items[i].Partition}
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	if !b.spool.PendingIn(keys) {
		return false
	}
	b.kickRecovery()
	wctx, cancel := context.WithTimeout(ctx, spoolWaitMax)
	defer cancel()
	for {
		// Wake up now and then to notice an outage or maintenance, during
		// which the replay stops and the wait would be for nothing.
		step, cancelStep := context.WithTimeout(wctx, 100*time.Millisecond)
		err := b.spool.WaitClear(step, keys)
		cancelStep()
		switch {
		case err == nil:
			return b.spooling()
		case b.spooling() || wctx.Err() != nil:
			return true
		}
	}
}

// spoolPush writes already prepared, deduplicated items to the spool and
// returns their store-level verdicts: buffered, or failed if even the spool
// write failed.
func (b *Broker) spoolPush(items []store.PushItem) []store.PushResult {
	b.sealKnown(items) // no plaintext in the spool for queues known to seal (encrypt.go)
	res := make([]store.PushResult, len(items))
	err := b.spool.Append(items)
	reason := api.ReasonSpoolWrite
	switch {
	case errors.Is(err, spool.ErrFull):
		// The disk works; the cap said no. Logged once per spell of a full
		// spool (queen_spool_full_refusals_total counts every item), not
		// once per push of a flood.
		reason = api.ReasonSpoolFull
		if !b.spoolFull.Swap(true) {
			b.log.Warn("spool full; pushes fail until replay frees it", "items", len(items), "err", err)
		}
	case err != nil:
		b.spoolBroken.Store(true)
		b.log.Error("spool write failed; items not stored", "items", len(items), "err", err)
	default:
		b.spoolBroken.Store(false)
		if b.spoolFull.Swap(false) {
			b.log.Info("spool takes pushes again")
		}
	}
	for i := range items {
		if err != nil {
			// The error names files of the broker: it goes to the log.
			res[i] = store.PushResult{Status: store.PushFailed, Error: reason}
			continue
		}
		res[i] = store.PushResult{Status: store.PushBuffered, MessageID: items[i].MessageID}
	}
	b.kickRecovery()
	return res
}

// markDown records that the store failed a write.
func (b *Broker) markDown(err error) {
	if !b.dbDown.Swap(true) {
		b.log.Error("database unavailable; pushes go to the spool", "err", err)
	}
	b.kickRecovery()
}

func (b *Broker) kickRecovery() { b.recovery.Kick() }

// recoverOnce checks the store if it is down and replays the spool if it
// may. The recovery service runs it every RecoverEvery and when kicked.
func (b *Broker) recoverOnce(ctx context.Context) {
	if b.spool == nil {
		return
	}
	if b.dbDown.Load() {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := b.store.Ping(pctx)
		cancel()
		if err != nil {
			return
		}
		b.dbDown.Store(false)
		b.log.Info("database reachable again")
	}
	if b.maintenance.Load() || b.spool.Pending() == 0 {
		return
	}
	start := time.Now()
	refusedBefore := b.spool.DeadLettered()
	n, err := b.spool.Replay(ctx, replayBatch, b.replayPush)
	refused := b.spool.DeadLettered() - refusedBefore
	if err != nil {
		if ctx.Err() == nil && errors.Is(err, store.ErrUnavailable) {
			b.markDown(err)
		}
		// Once per outage (the next attempts wait for a good ping) or per
		// spool fault; never per item.
		b.log.Warn("spool replay interrupted", "replayed", n, "set_aside", refused,
			"pending", b.spool.Pending(), "err", err)
		return
	}
	if n > 0 || refused > 0 {
		b.log.Info("spool replayed", "messages", n, "set_aside", refused, "pending", b.spool.Pending(),
			"took", time.Since(start).Round(time.Millisecond))
	}
	if refused > 0 {
		b.log.Warn("spooled pushes refused by the database were set aside", "items", refused,
			"total", b.spool.DeadLettered(), "file", b.spool.DeadLetterPath())
	}
}

// replayPush stores spooled items. They carry the ids minted when they were
// accepted, so an item stored before a crash comes back as a duplicate of
// itself, which is success. Only an outage stops the replay: an item the
// database refuses for any other reason is returned as a refusal, which the
// spool sets aside, so that one bad item can never block those behind it.
// A batch refused as a whole is retried item by item to find the bad ones.
func (b *Broker) replayPush(ctx context.Context, items []store.PushItem) ([]spool.Refusal, error) {
	res, err := b.storePush(ctx, items) // seals what was spooled plain (encrypt.go)
	switch {
	case err == nil:
	case errors.Is(err, store.ErrUnavailable), errors.Is(err, store.ErrClosed), ctx.Err() != nil:
		return nil, err
	case len(items) > 1:
		return b.replayOneByOne(ctx, items)
	default:
		return []spool.Refusal{{Index: 0, Reason: refusalReason(err)}}, nil
	}
	var refused []spool.Refusal
	var touched []store.Wake
	queued := 0
	for i := range res {
		switch res[i].Status {
		case store.PushQueued:
			queued++
			touched = addWake(touched, store.QueueKey(items[i].Tenant, items[i].Queue))
		case store.PushDuplicate:
		default:
			refused = append(refused, spool.Refusal{Index: i, Reason: string(res[i].Status) + ": " + res[i].Error})
		}
	}
	b.metrics.Pushed(queued)
	if len(touched) > 0 {
		b.hub.kick(touched...)
	}
	return refused, nil
}

// replayOneByOne replays a batch the database refused as a whole, one item
// at a time, so that only the items it refuses are set aside.
func (b *Broker) replayOneByOne(ctx context.Context, items []store.PushItem) ([]spool.Refusal, error) {
	var refused []spool.Refusal
	for i := range items {
		r, err := b.replayPush(ctx, items[i:i+1])
		if err != nil {
			return nil, err
		}
		for _, x := range r {
			refused = append(refused, spool.Refusal{Index: i, Reason: x.Reason})
		}
	}
	return refused, nil
}

// refusalReason is the reason written beside a set-aside item: the store's
// error, which names what the database refused.
func refusalReason(err error) string {
	return "refused by the database: " + err.Error()
}
