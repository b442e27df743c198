package httpapi

import (
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/queen-go/queen/api"
)

// hostRefusedName names the refusal of a Host outside the allowlist in
// metrics and access logs.
const hostRefusedName = "host_refused"

// hosts is the Host allowlist (QUEEN_ALLOWED_HOSTS), which stops DNS
// rebinding: a page of attacker.example whose name is made to resolve to
// the broker sends Host: attacker.example, which no allowlist names.
type hosts struct {
	anyHost  bool     // "*" was listed
	names    []string // exact names or addresses, lower case
	suffixes []string // ".example.com" of the entries "*.example.com"
	// loopback, with no list set, reports whether the broker listens on
	// loopback only: then only loopback names and addresses are accepted.
	loopback func() bool
	set      bool // a list was configured
}

// newHosts builds the allowlist of list (nil: unset) for a broker whose
// listener loopback reports on.
func newHosts(list []string, loopback func() bool) *hosts {
	h := &hosts{loopback: loopback, set: list != nil}
	for _, e := range list {
		e = strings.ToLower(strings.TrimSpace(e))
		switch {
		case e == "*":
			h.anyHost = true
		case strings.HasPrefix(e, "*."):
			h.suffixes = append(h.suffixes, e[1:])
		case e != "":
			h.names = append(h.names, strings.Trim(e, "[]"))
		}
	}
	if h.loopback == nil {
		h.loopback = func() bool { return false }
	}
	return h
}

// refused returns why a request with this Host header is refused, "" when
// it is not. A request without a Host (HTTP/1.0) is not refused: browsers
// always send one.
func (h *hosts) refused(hostport string) string {
	if hostport == "" || h.anyHost {
		return ""
	}
	name := hostport
	if n, _, err := net.SplitHostPort(hostport); err == nil {
		name = n
	}
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	if h.set {
		for _, n := range h.names {
			if n == name {
				return ""
			}
		}
		for _, s := range h.suffixes {
			if strings.HasSuffix(name, s) {
				return ""
			}
		}
		return "host refused: Host " + strconv.Quote(hostport) + " is not allowed by QUEEN_ALLOWED_HOSTS"
	}
	if !h.loopback() || loopbackName(name) {
		return ""
	}
	return "host refused: Host " + strconv.Quote(hostport) +
		" is not a loopback name, and the broker listens on loopback (set QUEEN_ALLOWED_HOSTS)"
}

// loopbackName reports whether name is localhost, a name under .localhost
// or a loopback address.
func loopbackName(name string) bool {
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(strings.Trim(name, "[]"))
	return err == nil && ip.Unmap().IsLoopback()
}

// refuseHost answers a request the allowlist refuses: 403 in Queen's
// envelope, saying why.
func (h *hosts) refuseHost(w http.ResponseWriter, r *http.Request) error {
	return api.ErrForbidden.With(h.refused(r.Host))
}
