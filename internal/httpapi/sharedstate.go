package httpapi

import (
	"net/http"
	"strings"
	"time"

	"github.com/queen-go/queen/api"
	"github.com/queen-go/queen/internal/broker"
	"github.com/queen-go/queen/internal/store"
)

// sharedStateRoutes are Queen's shared-state and broker-to-broker routes.
// Queen's brokers share state over UDP datagrams; these share it through
// their database, so the routes report that channel and the notify route
// wakes this broker's long polls as a wake-up from another broker would.
type sharedStateRoutes struct {
	broker *broker.Broker
}

func (g *sharedStateRoutes) Routes() []Route {
	return []Route{
		row(AccessAdmin, "GET", "/api/v1/system/shared-state", "shared_state", g.stats).Operator(),
		row(AccessAdmin, "GET", "/internal/api/shared-state/stats", "shared_state_stats", g.stats).Operator(),
		row(AccessAdmin, "GET", "/internal/api/inter-instance/stats", "inter_instance_stats", g.stats).Operator(),
		row(AccessAdmin, "POST", "/internal/api/notify", "internal_notify", g.notify).Operator(),
	}
}

// peerAlive is how recently a broker must have been heard to count as alive.
const peerAlive = time.Minute

func (g *sharedStateRoutes) stats(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, sharedStateOf(g.broker.SharedState(), time.Now()))
	return nil
}

// sharedStateOf writes the broker's shared state with Queen's keys.
func sharedStateOf(st broker.SharedState, now time.Time) api.SharedState {
	t := st.Transport
	out := api.SharedState{
		Enabled:            t.Kind != "",
		Running:            t.Kind != "" && t.Listening,
		ServerID:           t.Instance,
		MaintenanceMode:    st.Maintenance,
		PopMaintenanceMode: st.PopMaintenance,
		Transport: api.SharedTransport{
			Type: t.Kind, Channel: t.Channel, ServerID: t.Instance, SessionID: t.Instance,
			Peers: []api.SharedPeer{}, LearnedIdentities: []string{},
			MessagesSent: t.Sent, MessagesReceived: t.Received, MessagesDropped: t.Dropped,
		},
		QueueConfigCache: api.QueueConfigCache{Size: st.CacheSize, Hits: st.CacheHits, Misses: st.CacheMisses},
	}
	if t.Kind == "" {
		out.Transport.Type = "none"
	}
	if n := st.CacheHits + st.CacheMisses; n > 0 {
		out.QueueConfigCache.HitRate = float64(st.CacheHits) / float64(n)
	}
	for _, p := range t.Peers {
		alive := now.Sub(p.LastSeen) < peerAlive
		out.Transport.Peers = append(out.Transport.Peers, api.SharedPeer{
			ServerID: p.ID, LastSeen: api.TimeOf(p.LastSeen), MessagesReceived: p.Received, Alive: alive,
		})
		out.Transport.LearnedIdentities = append(out.Transport.LearnedIdentities, p.ID)
		if alive {
			out.ServerHealth.ServersAlive++
		} else {
			out.ServerHealth.ServersDead++
		}
	}
	out.Transport.PeerCount = len(t.Peers)
	out.Transport.LearnedIdentitiesCount = len(t.Peers)
	out.ServerHealth.ServersTracked = len(t.Peers)
	return out
}

// notify wakes this broker's long polls of the queue named in the body;
// each looks at the store again and, finding nothing, waits on.
func (g *sharedStateRoutes) notify(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	var b api.NotifyRequest
	if err := unmarshal(body, &b); err != nil {
		return err
	}
	if strings.TrimSpace(b.Queue) == "" {
		return badRequest("queue is required")
	}
	g.broker.Notify(store.QueueKey(store.TenantOrDefault(caller(r).Tenant), b.Queue))
	writeJSON(w, http.StatusOK, api.StatusOK{Status: "ok"})
	return nil
}
