package httpapi

import "net/http"

// extendJSON is a lease extension's answer; {"renewed":0,"expiresAt":null}
// for a lease that is unknown, expired or not the caller's alike.
type extendJSON struct {
	Renewed   int     `json:"renewed"`
	ExpiresAt *string `json:"expiresAt"`
}

// extend answers 200 whatever became of the lease: renewal is best-effort.
func (a *api) extend(w http.ResponseWriter, r *http.Request) error {
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
	res, err := a.broker.ExtendLease(r.Context(), caller(r), leaseID, seconds)
	if err != nil {
		return err
	}
	out := extendJSON{Renewed: res.Renewed}
	if res.ExpiresAt != nil {
		s := timestamp(*res.ExpiresAt)
		out.ExpiresAt = &s
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
