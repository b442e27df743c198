package broker

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/queen-go/queen/internal/store"
)

// Spooler is the disk buffer the broker writes pushes to when the store
// cannot take them (package spool implements it).
type Spooler interface {
	Append(items []store.PushItem) error
	Pending() int64
	Replay(ctx context.Context, batch int, push func(context.Context, []store.PushItem) error) (int, error)
}

// replayBatch is how many spooled items one replayed push carries: large,
// so that replay outpaces new pushes, which queue behind it in the spool.
const replayBatch = 1000

// MaintenanceStatus is what the maintenance routes report.
type MaintenanceStatus struct {
	Buffered       int64
	BufferHealthy  bool
	DBHealthy      bool
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
	b.applyMaintenance(on)
	return nil
}

// SetPopMaintenance turns pop maintenance on or off for every broker on the
// store: while on, every pop answers empty at once.
func (b *Broker) SetPopMaintenance(ctx context.Context, on bool) error {
	if err := b.store.SettingSet(ctx, &store.SettingSetParams{Key: settingPopMaintenance, Value: strconv.FormatBool(on), Now: b.now()}); err != nil {
		return err
	}
	b.applyPopMaintenance(on)
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
// the store is unreachable the current modes stay.
func (b *Broker) refreshSettings(ctx context.Context) {
	for key, apply := range map[string]func(bool){
		settingMaintenance:    b.applyMaintenance,
		settingPopMaintenance: b.applyPopMaintenance,
	} {
		v, err := b.store.SettingGet(ctx, &store.SettingGetParams{Key: key})
		if err != nil {
			return
		}
		apply(v == "true")
	}
}

// spooling reports whether pushes must go to the spool now: in maintenance,
// while the database is down, and while older spooled pushes are still
// waiting (so that replay keeps each partition in order).
func (b *Broker) spooling() bool {
	return b.spool != nil && (b.maintenance.Load() || b.dbDown.Load() || b.spool.Pending() > 0)
}

// spoolPush writes already prepared, deduplicated items to the spool and
// returns their store-level verdicts: buffered, or failed if even the spool
// write failed.
func (b *Broker) spoolPush(items []store.PushItem) []store.PushResult {
	res := make([]store.PushResult, len(items))
	err := b.spool.Append(items)
	if err != nil {
		b.spoolBroken.Store(true)
		b.log.Error("spool write failed; items not stored", "items", len(items), "err", err)
	} else {
		b.spoolBroken.Store(false)
	}
	for i := range items {
		if err != nil {
			res[i] = store.PushResult{Status: store.PushFailed, Error: err.Error()}
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
	n, err := b.spool.Replay(ctx, replayBatch, b.replayPush)
	if err != nil {
		if ctx.Err() == nil {
			b.markDown(err)
		}
		b.log.Warn("spool replay interrupted", "replayed", n, "pending", b.spool.Pending(), "err", err)
		return
	}
	if n > 0 {
		b.log.Info("spool replayed", "messages", n, "took", time.Since(start).Round(time.Millisecond))
	}
}

// replayPush stores spooled items. They carry the ids minted when they were
// accepted, so an item stored before a crash comes back as a duplicate of
// itself, which is success.
func (b *Broker) replayPush(ctx context.Context, items []store.PushItem) error {
	res, err := b.store.MessagePushMany(ctx, &store.MessagePushManyParams{Items: items, Now: b.now()})
	if err != nil {
		return err
	}
	var touched []string
	queued := 0
	for i := range res {
		switch res[i].Status {
		case store.PushQueued:
			queued++
			touched = appendNew(touched, store.QueueKey(items[i].Tenant, items[i].Queue))
		case store.PushDuplicate:
		default:
			return errors.New("replay: item " + items[i].TransactionID + ": " + res[i].Error)
		}
	}
	b.metrics.Pushed(queued)
	if len(touched) > 0 {
		b.hub.kick(touched...)
	}
	return nil
}
