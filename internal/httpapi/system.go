package httpapi

import (
	"net/http"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/broker"
)

// maintenanceRoutes switch the maintenance modes. Queen answers them with
// these exact keys.
type maintenanceRoutes struct {
	broker *broker.Broker
}

func (g *maintenanceRoutes) Routes() []Route {
	return []Route{
		row(AccessAdmin, "GET", "/api/v1/system/maintenance", "maintenance_get", g.getMaintenance).Operator(),
		row(AccessAdmin, "POST", "/api/v1/system/maintenance", "maintenance_set", g.setMaintenance).Operator(),
		row(AccessAdmin, "GET", "/api/v1/system/maintenance/pop", "pop_maintenance_get", g.getPopMaintenance).Operator(),
		row(AccessAdmin, "POST", "/api/v1/system/maintenance/pop", "pop_maintenance_set", g.setPopMaintenance).Operator(),
	}
}

// decodeEnabled reads the {"enabled": bool} body of both toggles.
func decodeEnabled(r *http.Request) (bool, error) {
	body, err := readBody(r)
	if err != nil {
		return false, err
	}
	var b api.MaintenanceRequest
	if err := unmarshal(body, &b); err != nil {
		return false, err
	}
	if b.Enabled == nil {
		return false, badRequest("enabled (boolean) is required")
	}
	return *b.Enabled, nil
}

func (g *maintenanceRoutes) getMaintenance(w http.ResponseWriter, r *http.Request) error {
	st := g.broker.Maintenance()
	writeJSON(w, http.StatusOK, api.Maintenance{
		MaintenanceMode:    st.Maintenance,
		PopMaintenanceMode: st.PopMaintenance,
		BufferedMessages:   st.Buffered,
		BufferHealthy:      st.BufferHealthy,
		BufferStats:        api.BufferStats{PendingCount: st.Buffered, FailedCount: st.DeadLettered, DBHealthy: st.DBHealthy},
	})
	return nil
}

func (g *maintenanceRoutes) setMaintenance(w http.ResponseWriter, r *http.Request) error {
	on, err := decodeEnabled(r)
	if err != nil {
		return err
	}
	if err := g.broker.SetMaintenance(r.Context(), on); err != nil {
		return err
	}
	st := g.broker.Maintenance()
	msg := "Maintenance mode disabled: pushes go to the database; the buffer is being replayed"
	if on {
		msg = "Maintenance mode enabled: pushes are buffered to disk"
	}
	writeJSON(w, http.StatusOK, api.MaintenanceSet{MaintenanceMode: st.Maintenance,
		BufferedMessages: st.Buffered, BufferHealthy: st.BufferHealthy, Message: msg})
	return nil
}

func (g *maintenanceRoutes) getPopMaintenance(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, popMaintenance(g.broker.Maintenance().PopMaintenance))
	return nil
}

func (g *maintenanceRoutes) setPopMaintenance(w http.ResponseWriter, r *http.Request) error {
	on, err := decodeEnabled(r)
	if err != nil {
		return err
	}
	if err := g.broker.SetPopMaintenance(r.Context(), on); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, popMaintenance(on))
	return nil
}

func popMaintenance(on bool) api.PopMaintenance {
	if on {
		return api.PopMaintenance{PopMaintenanceMode: true, Message: "Pop maintenance mode enabled: every pop answers 204"}
	}
	return api.PopMaintenance{PopMaintenanceMode: false, Message: "Pop maintenance mode disabled: pops deliver messages"}
}

// buffers reports the spool: pushes waiting for replay, and pushes the
// database refused at replay, set aside in the spool's dead-letter file
// (failed and deadLettered are the same count).
func (g *operationRoutes) buffers(w http.ResponseWriter, r *http.Request) error {
	st := g.broker.Maintenance()
	writeJSON(w, http.StatusOK, api.Buffers{Pending: st.Buffered, Failed: st.DeadLettered, DBHealthy: st.DBHealthy,
		DeadLettered: st.DeadLettered, BufferHealthy: st.BufferHealthy, MaintenanceMode: st.Maintenance})
	return nil
}
