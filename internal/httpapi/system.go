package httpapi

import "net/http"

// The maintenance routes. Queen answers them with these exact keys.

type maintenanceBody struct {
	Enabled *bool `json:"enabled"`
}

// decodeEnabled reads the {"enabled": bool} body of both toggles.
func decodeEnabled(r *http.Request) (bool, error) {
	body, err := readBody(r)
	if err != nil {
		return false, err
	}
	var b maintenanceBody
	if err := unmarshal(body, &b); err != nil {
		return false, err
	}
	if b.Enabled == nil {
		return false, badRequest("enabled (boolean) is required")
	}
	return *b.Enabled, nil
}

type bufferStatsJSON struct {
	PendingCount int64 `json:"pendingCount"`
	FailedCount  int64 `json:"failedCount"`
	DBHealthy    bool  `json:"dbHealthy"`
}

type maintenanceJSON struct {
	MaintenanceMode    bool            `json:"maintenanceMode"`
	PopMaintenanceMode bool            `json:"popMaintenanceMode"`
	BufferedMessages   int64           `json:"bufferedMessages"`
	BufferHealthy      bool            `json:"bufferHealthy"`
	BufferStats        bufferStatsJSON `json:"bufferStats"`
}

func (a *api) getMaintenance(w http.ResponseWriter, r *http.Request) error {
	st := a.broker.Maintenance()
	writeJSON(w, http.StatusOK, maintenanceJSON{
		MaintenanceMode:    st.Maintenance,
		PopMaintenanceMode: st.PopMaintenance,
		BufferedMessages:   st.Buffered,
		BufferHealthy:      st.BufferHealthy,
		BufferStats:        bufferStatsJSON{PendingCount: st.Buffered, FailedCount: st.DeadLettered, DBHealthy: st.DBHealthy},
	})
	return nil
}

type maintenanceSetJSON struct {
	MaintenanceMode  bool   `json:"maintenanceMode"`
	BufferedMessages int64  `json:"bufferedMessages"`
	BufferHealthy    bool   `json:"bufferHealthy"`
	Message          string `json:"message"`
}

func (a *api) setMaintenance(w http.ResponseWriter, r *http.Request) error {
	on, err := decodeEnabled(r)
	if err != nil {
		return err
	}
	if err := a.broker.SetMaintenance(r.Context(), on); err != nil {
		return err
	}
	st := a.broker.Maintenance()
	msg := "Maintenance mode disabled: pushes go to the database; the buffer is being replayed"
	if on {
		msg = "Maintenance mode enabled: pushes are buffered to disk"
	}
	writeJSON(w, http.StatusOK, maintenanceSetJSON{MaintenanceMode: st.Maintenance,
		BufferedMessages: st.Buffered, BufferHealthy: st.BufferHealthy, Message: msg})
	return nil
}

type popMaintenanceJSON struct {
	PopMaintenanceMode bool   `json:"popMaintenanceMode"`
	Message            string `json:"message"`
}

func (a *api) getPopMaintenance(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, popMaintenance(a.broker.Maintenance().PopMaintenance))
	return nil
}

func (a *api) setPopMaintenance(w http.ResponseWriter, r *http.Request) error {
	on, err := decodeEnabled(r)
	if err != nil {
		return err
	}
	if err := a.broker.SetPopMaintenance(r.Context(), on); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, popMaintenance(on))
	return nil
}

func popMaintenance(on bool) popMaintenanceJSON {
	if on {
		return popMaintenanceJSON{true, "Pop maintenance mode enabled: every pop answers 204"}
	}
	return popMaintenanceJSON{false, "Pop maintenance mode disabled: pops deliver messages"}
}

// buffersJSON is /api/v1/status/buffers: the disk spool of this broker.
type buffersJSON struct {
	Pending   int64 `json:"pending"`
	Failed    int64 `json:"failed"`
	DBHealthy bool  `json:"dbHealthy"`
	Worker    int   `json:"worker"`
	// Beyond Queen: what failed means here, and push maintenance.
	DeadLettered    int64 `json:"deadLettered"`
	BufferHealthy   bool  `json:"bufferHealthy"`
	MaintenanceMode bool  `json:"maintenanceMode"`
}

// buffers reports the spool: pushes waiting for replay, and pushes the
// database refused at replay, set aside in the spool's dead-letter file
// (failed and deadLettered are the same count).
func (a *api) buffers(w http.ResponseWriter, r *http.Request) error {
	st := a.broker.Maintenance()
	writeJSON(w, http.StatusOK, buffersJSON{Pending: st.Buffered, Failed: st.DeadLettered, DBHealthy: st.DBHealthy,
		DeadLettered: st.DeadLettered, BufferHealthy: st.BufferHealthy, MaintenanceMode: st.Maintenance})
	return nil
}
