package httpapi

import (
	"net/http"

	"github.com/queen-go/queen/api"
)

// extend answers 200 whatever became of the lease: renewal is best-effort;
// {"renewed":0,"expiresAt":null} for a lease that is unknown, expired or
// not the caller's alike.
func (g *messageRoutes) extend(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	seconds, err := DecodeExtend(body)
	if err != nil {
		return err
	}
	leaseID := r.PathValue("leaseId")
	if err := checkPathText("leaseId", leaseID, kindID); err != nil {
		return err
	}
	res, err := g.broker.ExtendLease(r.Context(), caller(r), leaseID, seconds)
	if err != nil {
		return err
	}
	out := api.LeaseExtendResponse{Renewed: res.Renewed, ExpiresAt: timeRef(res.ExpiresAt)}
	writeJSON(w, http.StatusOK, out)
	return nil
}
