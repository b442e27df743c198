package transfer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/url"
	"sync"
	"time"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/service"
	"github.com/queen-go/queen/internal/store"
)

// The migration routes' job: one copy at a time of this broker's data, from
// either engine, into queen-go's schema on a target PostgreSQL, in the
// background, through CopyEngine (the code `queen migrate` runs).

// Errors of the routes' job; the HTTP layer maps them to 409.
var (
	// ErrRunning: a copy is running.
	//lint:ignore ST1005 Queen's text, which clients match
	ErrRunning = errors.New("Migration already in progress")
	// ErrResetRunning: reset while a copy is running.
	//lint:ignore ST1005 Queen's text, which clients match
	ErrResetRunning = errors.New("Cannot reset while migration is in progress")
)

// OpenFunc opens (creating when needed) this broker's schema on the
// PostgreSQL database at url; close releases it.
type OpenFunc func(ctx context.Context, url, schema string) (st store.TransferStore, close func(), err error)

// ServiceConfig wires the routes' job to the broker.
type ServiceConfig struct {
	// Source is the broker's own store.
	Source store.TransferStore
	// Open opens a target; nil leaves start and validate unavailable.
	Open OpenFunc
	// SetMaintenance and MaintenanceOn switch and read push maintenance:
	// on while a copy runs, so that pushes meanwhile wait in the spool
	// instead of going into the source behind the copy.
	SetMaintenance func(ctx context.Context, on bool) error
	MaintenanceOn  func() bool
	Logger         *slog.Logger
	// Batch is the copy's batch; 0 means 1000.
	Batch int
}

// Service serves the migration routes.
type Service struct {
	cfg ServiceConfig
	job *job
}

// NewService returns the routes' service.
func NewService(cfg ServiceConfig) Service {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return Service{cfg: cfg, job: &job{status: "idle"}}
}

// The phases of a running copy, by Queen's names. Queen's "dumping" is its
// preparation of the target before any data flows, "restoring" the stream
// of the data itself: here "dumping" lasts until the target is known empty
// and the source counted, "restoring" while rows are written (queues,
// messages, groups, dead letters, the features' state) and counted again.
const (
	statusDumping   = "dumping"
	statusRestoring = "restoring"
)

// job is the state of the one copy.
type job struct {
	mu            sync.Mutex
	status        string // idle, dumping, restoring, complete, error
	step          string
	err           string
	started, done time.Time
	copied, total int64
}

// targetURL is the target as a URL for the engine, password included: it
// stays in this process (no command is run with it) and every error that
// could carry it is redacted.
func targetURL(t api.MigrationTarget) (string, error) {
	cfg, err := TargetConfig(t) // checks the port
	if err != nil {
		return "", err
	}
	mode := "disable"
	if t.SSL {
		mode = "require"
	}
	u := url.URL{Scheme: "postgres", User: url.UserPassword(t.User, t.Password),
		Host: net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port)), Path: "/" + t.Database,
		RawQuery: "sslmode=" + mode + "&connect_timeout=10"}
	return u.String(), nil
}

func (s Service) open(ctx context.Context, t api.MigrationStart) (store.TransferStore, func(), error) {
	if s.cfg.Open == nil || s.cfg.Source == nil || s.job == nil {
		return nil, nil, api.ErrFeatureUnavailable.With("migration is not available on this broker")
	}
	u, err := targetURL(t.MigrationTarget)
	if err != nil {
		return nil, nil, err
	}
	schema := t.Schema
	if schema == "" {
		schema = DefaultSchema
	}
	dst, closeDst, err := s.cfg.Open(ctx, u, schema)
	if err != nil {
		return nil, nil, redacted(err, t.Password)
	}
	return dst, closeDst, nil
}

// Start checks that the target holds no queue and starts the copy in the
// background. ErrRunning while one runs; an error wrapping
// ErrTargetNotEmpty for a target that holds queues (or other rows a copy
// writes).
func (s Service) Start(ctx context.Context, t api.MigrationStart) error {
	if s.job != nil {
		s.job.mu.Lock()
		running := s.job.running()
		s.job.mu.Unlock()
		if running {
			return ErrRunning
		}
	}
	dst, closeDst, err := s.open(ctx, t)
	if err != nil {
		return err
	}
	if err := CheckEmpty(ctx, dst); err != nil {
		closeDst()
		return redacted(err, t.Password)
	}
	j := s.job
	j.mu.Lock()
	if j.running() {
		j.mu.Unlock()
		closeDst()
		return ErrRunning
	}
	j.status, j.step, j.err, j.started, j.done, j.copied, j.total = statusDumping, "switching push maintenance on", "",
		time.Now(), time.Time{}, 0, 0
	j.mu.Unlock()

	wasOn := s.cfg.MaintenanceOn != nil && s.cfg.MaintenanceOn()
	turnedOn := false
	if s.cfg.SetMaintenance != nil && !wasOn {
		if err := s.cfg.SetMaintenance(ctx, true); err != nil {
			s.finish(fmt.Errorf("switch push maintenance on: %w", err), t.Password)
			closeDst()
			return nil
		}
		turnedOn = true
	}
	s.cfg.Logger.Info("migration started", "target_host", t.Host, "target_database", t.Database, "schema", t.Schema)
	go func() {
		defer closeDst()
		ctx := context.Background()
		var err error
		if service.Protect(s.cfg.Logger, "migration", func() { err = s.copy(ctx, j, dst) }) {
			err = errors.New("the copy stopped on an internal error (a panic; the broker's log has its stack)")
		}
		if err != nil && turnedOn {
			// Nothing moved: pushes go to this broker's database again.
			if merr := s.cfg.SetMaintenance(ctx, false); merr != nil {
				s.cfg.Logger.Warn("migration: push maintenance stays on", "err", merr)
			}
		}
		s.finish(err, t.Password)
	}()
	return nil
}

// copy copies the source engine to dst, reporting its progress in j.
func (s Service) copy(ctx context.Context, j *job, dst store.TransferStore) error {
	j.set("counting the source")
	rep, err := CopyEngine(ctx, s.cfg.Source, dst, Options{Batch: s.cfg.Batch, Writing: func(total int64) {
		j.mu.Lock()
		j.status, j.total, j.step = statusRestoring, total, fmt.Sprintf("copying messages: 0 of %d", total)
		j.mu.Unlock()
	}, Progress: func(p Progress) {
		j.mu.Lock()
		j.copied, j.total = p.Messages, p.Total
		j.step = fmt.Sprintf("copying messages: %d of %d", p.Messages, p.Total)
		j.mu.Unlock()
	}})
	if err == nil && !rep.Match() {
		err = fmt.Errorf("the counts differ after the copy: %v", rep)
	}
	return err
}

// running reports whether a copy runs; j.mu is held.
func (j *job) running() bool { return j.status == statusDumping || j.status == statusRestoring }

func (j *job) set(step string) {
	j.mu.Lock()
	j.step = step
	j.mu.Unlock()
}

// finish records the end of the copy.
func (s Service) finish(err error, password string) {
	j := s.job
	j.mu.Lock()
	defer j.mu.Unlock()
	j.done = time.Now()
	if err != nil {
		j.status, j.err, j.step = "error", redacted(err, password).Error(), "failed"
		s.cfg.Logger.Error("migration failed", "err", j.err)
		return
	}
	j.status, j.step = "complete", "done: push maintenance stays on until this broker moves to the target"
	s.cfg.Logger.Info("migration complete", "messages", j.copied)
}

// Status reports the copy.
func (s Service) Status() api.MigrationStatus {
	if s.job == nil {
		return api.MigrationStatus{Status: "idle"}
	}
	j := s.job
	j.mu.Lock()
	defer j.mu.Unlock()
	st := api.MigrationStatus{Status: j.status, CurrentStep: j.step, Error: j.err, Messages: j.copied, TotalMessages: j.total}
	if !j.started.IsZero() {
		end := j.done
		if end.IsZero() {
			end = time.Now()
		}
		st.ElapsedSeconds = math.Round(end.Sub(j.started).Seconds()*10) / 10
	}
	return st
}

// Validate counts what the copy copies at this broker and at the target.
func (s Service) Validate(ctx context.Context, t api.MigrationStart) (api.MigrationValidation, error) {
	dst, closeDst, err := s.open(ctx, t)
	if err != nil {
		return api.MigrationValidation{}, err
	}
	defer closeDst()
	rep, err := Validate(ctx, s.cfg.Source, dst)
	if err != nil {
		return api.MigrationValidation{}, redacted(err, t.Password)
	}
	out := api.MigrationValidation{Success: true, AllMatch: rep.Match(), Tables: make([]api.MigrationTable, len(rep))}
	for i, c := range rep {
		out.Tables[i] = api.MigrationTable{Table: c.Entity, SourceCount: c.Source, TargetCount: c.Target, Match: c.Source == c.Target}
	}
	return out, nil
}

// Reset forgets a finished copy; ErrResetRunning while one runs.
func (s Service) Reset() error {
	if s.job == nil {
		return nil
	}
	j := s.job
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.running() {
		return ErrResetRunning
	}
	j.status, j.step, j.err, j.started, j.done, j.copied, j.total = "idle", "", "", time.Time{}, time.Time{}, 0, 0
	return nil
}
