package delivery

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
)

// ErrDenied is a delivery to an address QUEEN_DELIVERY_ALLOW does not
// allow.
var ErrDenied = errors.New("delivery address not allowed")

// Guard decides which addresses deliveries may connect to: public
// addresses, and the ranges of QUEEN_DELIVERY_ALLOW besides ("*": any).
// It is checked when a target is saved (an address literal in its URL)
// and again on every connection (the dialer's control), so that a name
// resolving to a private address, at any time, is refused.
type Guard struct {
	any   bool
	allow []netip.Prefix
}

// NewGuard parses the allow list: addresses, CIDR ranges, or "*".
func NewGuard(list []string) (*Guard, error) {
	g := &Guard{}
	for _, s := range list {
		s = strings.TrimSpace(s)
		switch {
		case s == "":
		case s == "*":
			g.any = true
		default:
			if p, err := netip.ParsePrefix(s); err == nil {
				g.allow = append(g.allow, p.Masked())
			} else if a, err := netip.ParseAddr(s); err == nil {
				g.allow = append(g.allow, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			} else {
				return nil, fmt.Errorf("QUEEN_DELIVERY_ALLOW: %q is neither an address, a CIDR range nor *", s)
			}
		}
	}
	return g, nil
}

// nonPublic are the ranges beyond the standard library's predicates that
// are not the public Internet: this network, shared address space (CGNAT),
// benchmarking, IETF protocol assignments, documentation, reserved, and
// NAT64 and 6to4 prefixes that embed an IPv4 address.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("2002::/16"),
	netip.MustParsePrefix("2001:db8::/32"),
	netip.MustParsePrefix("100::/64"),
}

// Public reports whether a is a public unicast address.
func Public(a netip.Addr) bool {
	a = a.Unmap()
	if !a.IsValid() || a.IsLoopback() || a.IsPrivate() || a.IsUnspecified() || a.IsLinkLocalUnicast() ||
		a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() || a.IsMulticast() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// Permits reports whether deliveries may connect to a.
func (g *Guard) Permits(a netip.Addr) bool {
	a = a.Unmap()
	if g.any {
		return true
	}
	for _, p := range g.allow {
		if p.Contains(a) {
			return true
		}
	}
	return Public(a)
}

// CheckURL parses a target URL: http or https, a host, no user info, and
// an address literal the guard permits.
func (g *Guard) CheckURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("url: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, errors.New("url: scheme must be http or https")
	}
	if u.Hostname() == "" || u.User != nil || u.Fragment != "" || u.Opaque != "" {
		return nil, errors.New("url: a host is required, and no user info nor fragment")
	}
	if a, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err == nil && !g.Permits(a) {
		return nil, fmt.Errorf("url: %w: %s", ErrDenied, a)
	}
	return u, nil
}

// control is the dialer's control: it refuses a connection to an address
// the guard does not permit, whatever name resolved to it.
func (g *Guard) control(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrDenied, address)
	}
	a, err := netip.ParseAddr(host)
	if err != nil || !g.Permits(a) {
		return fmt.Errorf("%w: %s", ErrDenied, host)
	}
	return nil
}
