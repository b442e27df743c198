package delivery

import (
	_ "embed"
	"encoding/json"
	"io"
	"net/http"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/httpapi"
	"github.com/queen-go/queen/internal/ingress"
	"github.com/queen-go/queen/internal/store"
)

// The management routes: admin level, for the caller's tenant, answering
// errors in the ingress's envelope.

const maxManageBody = 64 << 10

func tenantOf(r *http.Request) string { return store.TenantOrDefault(httpapi.Caller(r).Tenant) }

// Routes implements httpapi.Group.
func (s *Service) Routes() []httpapi.Route {
	r := func(method, pattern, name string, h httpapi.Handler) httpapi.Route {
		return httpapi.Route{RouteInfo: httpapi.RouteInfo{Access: httpapi.AccessAdmin, Method: method, Pattern: pattern,
			Name: name}, Handler: h}
	}
	const t = "/api/v1/delivery/targets"
	return httpapi.Behind(nil, ingress.Envelope,
		r("GET", t, "delivery_targets", s.listRoute),
		r("POST", t, "delivery_target_create", s.createRoute),
		r("GET", t+"/{id}", "delivery_target_get", s.getRoute),
		r("PUT", t+"/{id}", "delivery_target_put", s.putRoute),
		r("DELETE", t+"/{id}", "delivery_target_delete", s.deleteRoute),
		r("POST", t+"/{id}/pause", "delivery_target_pause", s.pauseRoute(true)),
		r("POST", t+"/{id}/resume", "delivery_target_resume", s.pauseRoute(false)),
		r("GET", "/api/v1/delivery/attempts/{queue}/{messageId}", "delivery_attempts", s.attemptsRoute),
	)
}

func readTarget(r *http.Request) (*api.DeliveryTarget, error) {
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, maxManageBody))
	if err != nil {
		return nil, api.ErrBadRequest.Withf("read body: %v", err)
	}
	var in api.DeliveryTarget
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, api.ErrBadRequest.Withf("bad body: %v", err)
	}
	return &in, nil
}

func (s *Service) listRoute(w http.ResponseWriter, r *http.Request) error {
	l, err := s.List(r.Context(), tenantOf(r), r.URL.Query().Get("queue"))
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, struct {
		Targets []api.DeliveryTarget `json:"targets"`
	}{l})
	return nil
}

func (s *Service) createRoute(w http.ResponseWriter, r *http.Request) error {
	in, err := readTarget(r)
	if err != nil {
		return err
	}
	out, err := s.Create(r.Context(), tenantOf(r), in)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusCreated, out)
	return nil
}

func (s *Service) getRoute(w http.ResponseWriter, r *http.Request) error {
	out, err := s.Get(r.Context(), tenantOf(r), r.PathValue("id"))
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (s *Service) putRoute(w http.ResponseWriter, r *http.Request) error {
	in, err := readTarget(r)
	if err != nil {
		return err
	}
	out, err := s.Update(r.Context(), tenantOf(r), r.PathValue("id"), in)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (s *Service) deleteRoute(w http.ResponseWriter, r *http.Request) error {
	if err := s.Delete(r.Context(), tenantOf(r), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Service) pauseRoute(paused bool) httpapi.Handler {
	return func(w http.ResponseWriter, r *http.Request) error {
		out, err := s.SetPaused(r.Context(), tenantOf(r), r.PathValue("id"), paused)
		if err != nil {
			return err
		}
		httpapi.WriteJSON(w, http.StatusOK, out)
		return nil
	}
}

func (s *Service) attemptsRoute(w http.ResponseWriter, r *http.Request) error {
	out, err := s.Attempts(r.Context(), tenantOf(r), r.PathValue("queue"), r.PathValue("messageId"),
		r.URL.Query().Get("target"))
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, struct {
		Deliveries []api.DeliveryAttempts `json:"deliveries"`
	}{out})
	return nil
}

//go:embed openapi.json
var openapiFragment []byte

// OpenAPI implements httpapi.DocumentedGroup: the routes' fragment of the
// OpenAPI document.
func (s *Service) OpenAPI() []byte { return openapiFragment }
