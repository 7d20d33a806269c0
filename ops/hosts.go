package ops

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"google.golang.org/grpc/codes"
)

// ErrHostName: a name given to NewHosts is not a host name.
var ErrHostName = errors.New("not a host name")

// Hosts is the Host check of what is mounted on the ops port (the JSON API,
// the web UI and its event stream), against DNS rebinding: a page on a name
// the attacker controls, rebound to this node's address, is same-origin to
// the browser, so no Origin or Sec-Fetch-Site check stops it; only its Host
// header gives it away. An IP literal and localhost are always answered (a
// page cannot rebind them), other names only when listed. The zero and the
// nil Hosts list none.
type Hosts struct {
	names map[string]struct{}
}

// NewHosts lists the names besides IP literals and localhost that the
// routes behind the check answer to (serve --http-host), without port or
// scheme; case and a trailing dot do not matter.
func NewHosts(names []string) (*Hosts, error) {
	h := &Hosts{names: map[string]struct{}{}}
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		name := canonicalHost(n)
		if !validHostName(name) {
			return nil, fmt.Errorf("%w: %q (give DNS names without port, scheme or wildcard, like raftcron.example)", ErrHostName, n)
		}
		h.names[name] = struct{}{}
	}
	return h, nil
}

// Allow reports whether a request whose Host header is host may reach the
// routes behind the check.
func (h *Hosts) Allow(host string) bool {
	name, ok := hostOfHeader(host)
	if !ok {
		return false
	}
	if _, err := netip.ParseAddr(name); err == nil || name == "localhost" {
		return true
	}
	if h == nil {
		return false
	}
	_, ok = h.names[name]
	return ok
}

// Guard answers 421 Misdirected Request, before next runs, to a request
// whose Host the check refuses.
func (h *Hosts) Guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.Allow(r.Host) {
			misdirected(w, r.Host)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// misdirected answers in the JSON API's error shape (a gRPC status), so
// that its clients and the UI's pages read one kind of error.
func misdirected(w http.ResponseWriter, host string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusMisdirectedRequest)
	_ = json.NewEncoder(w).Encode(struct {
		Code    codes.Code `json:"code"`
		Message string     `json:"message"`
	}{codes.PermissionDenied, fmt.Sprintf("this node does not answer to the host %q: "+
		"call it by IP address or localhost, or list the name in serve --http-host", host)})
}

// hostOfHeader is the host of a Host header ("name", "name:port",
// "1.2.3.4:80", "[::1]:80"), in canonical form.
func hostOfHeader(host string) (string, bool) {
	name := host
	if h, port, err := net.SplitHostPort(host); err == nil {
		if strings.Trim(port, "0123456789") != "" {
			return "", false
		}
		name = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		name = host[1 : len(host)-1]
	}
	if name == "" {
		return "", false
	}
	return canonicalHost(name), true
}

func canonicalHost(name string) string {
	return strings.TrimSuffix(strings.ToLower(name), ".")
}

// validHostName: an IP address (always answered, so harmless to list) or
// dot-separated labels of letters, digits, '-' and '_', none empty or
// longer than 63, at most 253 in all.
func validHostName(name string) bool {
	if _, err := netip.ParseAddr(name); err == nil {
		return true
	}
	if name == "" || len(name) > 253 {
		return false
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > 63 || strings.Trim(label, "abcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
			return false
		}
	}
	return true
}
