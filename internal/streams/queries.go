package streams

import (
	"context"

	"github.com/queen-go/queen/internal/store"
)

// Registration names a query and what it reads and writes.
type Registration struct {
	ConfigHash  string
	Name        string
	Reset       bool // with another config hash: drop the state and start afresh
	SinkQueue   string
	SourceQueue string
}

// Registered is a registration that took effect.
type Registered struct {
	Fresh   bool // the query was created
	QueryID string
	Reset   bool // its state was dropped for the new config hash
}

// MismatchError refuses a registration whose config hash differs from the
// registered one's without Reset: the operator chain changed, and feeding
// it the old state would be wrong. Nothing changed.
type MismatchError struct {
	Name    string
	QueryID string
}

// Error is Queen's text, which its SDKs show as they are.
func (e *MismatchError) Error() string {
	return "config_hash mismatch: operator chain changed for queryId '" + e.Name +
		"'. Pass reset:true to wipe existing state, or use a new queryId."
}

// Register creates the tenant's query of that name or updates it: the same
// config hash keeps its state, another hash with Reset drops it, another
// hash without Reset is a *MismatchError.
func (s *Streams) Register(ctx context.Context, tenant string, r Registration) (*Registered, error) {
	res, err := s.store.StreamQueryRegister(ctx, &store.StreamQueryRegisterParams{
		ConfigHash: r.ConfigHash, Name: r.Name, Now: s.now(), Reset: r.Reset, SinkQueue: r.SinkQueue,
		SourceQueue: r.SourceQueue, Tenant: tenant,
	})
	if err != nil {
		return nil, err
	}
	if res.Mismatch {
		return nil, &MismatchError{Name: r.Name, QueryID: res.QueryID}
	}
	if res.Reset {
		s.purge.Kick()
	}
	return &Registered{Fresh: res.Fresh, QueryID: res.QueryID, Reset: res.Reset}, nil
}

// Queries lists a page of the tenant's queries by name, with the size of
// their state.
func (s *Streams) Queries(ctx context.Context, tenant string, limit, offset int) (*store.StreamQueryListResult, error) {
	return s.store.StreamQueryList(ctx, &store.StreamQueryListParams{Limit: limit, Now: s.now(), Offset: offset,
		Tenant: tenant})
}

// Query describes the tenant's query of that name with the size of its
// state; store.ErrQueryNotFound if there is none.
func (s *Streams) Query(ctx context.Context, tenant, name string) (*store.StreamQuery, error) {
	res, err := s.store.StreamQueryList(ctx, &store.StreamQueryListParams{Name: name, Now: s.now(), Tenant: tenant})
	if err != nil {
		return nil, err
	}
	return &res.Queries[0], nil
}

// Delete deletes the tenant's query of that name and reports whether it
// existed. Its state is unreachable at once and freed in the background.
func (s *Streams) Delete(ctx context.Context, tenant, name string) (bool, error) {
	existed, err := s.store.StreamQueryDelete(ctx, &store.StreamQueryDeleteParams{Name: name, Now: s.now(),
		Tenant: tenant})
	if existed {
		s.purge.Kick()
	}
	return existed, err
}
