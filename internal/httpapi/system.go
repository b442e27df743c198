package httpapi

import "net/http"

// Maintenance routes. Queen answers them with these exact keys.

type maintenanceBody struct {
	Enabled *bool `json:"enabled"`
}

func (a *api) decodeEnabled(w http.ResponseWriter, r *http.Request) (bool, bool) {
	body, err := readBody(r)
	if err != nil {
		a.writeError(w, r, err)
		return false, false
	}
	var b maintenanceBody
	if err := unmarshal(body, &b); err != nil {
		a.writeError(w, r, err)
		return false, false
	}
	if b.Enabled == nil {
		a.writeError(w, r, &badRequest{msg: "enabled (boolean) is required"})
		return false, false
	}
	return *b.Enabled, true
}

func (a *api) getMaintenance(w http.ResponseWriter, r *http.Request) {
	st := a.broker.Maintenance()
	writeJSON(w, http.StatusOK, map[string]any{
		"maintenanceMode":    st.Maintenance,
		"popMaintenanceMode": st.PopMaintenance,
		"bufferedMessages":   st.Buffered,
		"bufferHealthy":      st.BufferHealthy,
		"bufferStats": map[string]any{
			"pendingCount": st.Buffered, "failedCount": 0, "dbHealthy": st.DBHealthy,
		},
	})
}

func (a *api) setMaintenance(w http.ResponseWriter, r *http.Request) {
	on, ok := a.decodeEnabled(w, r)
	if !ok {
		return
	}
	if err := a.broker.SetMaintenance(r.Context(), on); err != nil {
		a.writeError(w, r, err)
		return
	}
	st := a.broker.Maintenance()
	msg := "Maintenance mode disabled: pushes go to the database; the buffer is being replayed"
	if on {
		msg = "Maintenance mode enabled: pushes are buffered to disk"
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"maintenanceMode": st.Maintenance, "bufferedMessages": st.Buffered,
		"bufferHealthy": st.BufferHealthy, "message": msg,
	})
}

func (a *api) getPopMaintenance(w http.ResponseWriter, r *http.Request) {
	on := a.broker.Maintenance().PopMaintenance
	writeJSON(w, http.StatusOK, map[string]any{"popMaintenanceMode": on, "message": popMaintenanceMessage(on)})
}

func (a *api) setPopMaintenance(w http.ResponseWriter, r *http.Request) {
	on, ok := a.decodeEnabled(w, r)
	if !ok {
		return
	}
	if err := a.broker.SetPopMaintenance(r.Context(), on); err != nil {
		a.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"popMaintenanceMode": on, "message": popMaintenanceMessage(on)})
}

func popMaintenanceMessage(on bool) string {
	if on {
		return "Pop maintenance mode enabled: every pop answers 204"
	}
	return "Pop maintenance mode disabled: pops deliver messages"
}
