package impersonator

import (
	"net/http"
	"net/textproto"
	"strings"
)

// hopByHopHeaders are the canonical names of the headers that describe one connection, not the
// request (RFC 9110 7.6.1 and the headers RFC 7230 and its predecessors made hop-by-hop):
// they are the proxy's own business on the client's connection and are never forwarded as the
// client sent them. Every header beginning with "Proxy-" is one too.
var hopByHopHeaders = []string{"Connection", "Keep-Alive", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// withHopByHopHeadersRemoved removes the hop-by-hop headers of a request before any of the
// proxy's logic reads it, as RFC 9110 7.6.1 asks of a proxy: every header the Connection header
// names, then the hop-by-hop headers themselves. Only a real upgrade (HTTP/1.1 with the
// "upgrade" connection option and an Upgrade header, as exec, attach and port-forward send)
// keeps "Connection: Upgrade" and its Upgrade header, and nothing else in Connection.
//
// Done here, once, what the proxy decides on (authentication, impersonation, authorization) is
// what it forwards: a client cannot have a header removed between the proxy's decision and the
// kube-apiserver by naming it in Connection (httputil.ReverseProxy honours Connection too). The
// headers that carry the identity are in any case set after the reverse proxy, in the transport
// (see identityTransport).
func withHopByHopHeadersRemoved(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Close || hasHopByHopHeaders(r.Header) {
			r = r.Clone(r.Context())
			removeHopByHopHeaders(r)
		}
		next.ServeHTTP(w, r)
	})
}

// hasHopByHopHeaders reports whether h holds anything removeHopByHopHeaders removes: most
// requests hold nothing of the kind and need no copy.
func hasHopByHopHeaders(h http.Header) bool {
	for name := range h {
		if isHopByHop(name) {
			return true
		}
	}
	return false
}

// removeHopByHopHeaders changes r's headers in place, as withHopByHopHeadersRemoved says.
func removeHopByHopHeaders(r *http.Request) {
	h := r.Header
	options := connectionOptions(h)
	upgrade := r.ProtoMajor == 1 && r.ProtoMinor >= 1 && options["upgrade"] && len(h.Values("Upgrade")) > 0
	protocols := h.Values("Upgrade")
	for option := range options {
		deleteAnyCase(h, option)
	}
	for name := range h {
		if isHopByHop(name) {
			delete(h, name)
		}
	}
	if upgrade {
		h["Connection"] = []string{"Upgrade"}
		h["Upgrade"] = protocols
	}
	// "Connection: close" is about the client's connection, which the server keeps track of on
	// its own: the forwarded request must not ask the kube-apiserver for it.
	r.Close = false
}

// isHopByHop reports whether the header name (in any case) is hop-by-hop.
func isHopByHop(name string) bool {
	canonical := textproto.CanonicalMIMEHeaderKey(name)
	if strings.HasPrefix(canonical, "Proxy-") {
		return true
	}
	for _, hop := range hopByHopHeaders {
		if canonical == hop {
			return true
		}
	}
	return false
}

// connectionOptions are the lower-case options of every Connection header of h (a
// comma-separated list of tokens, possibly repeated over several header lines).
func connectionOptions(h http.Header) map[string]bool {
	options := map[string]bool{}
	for name, values := range h {
		if textproto.CanonicalMIMEHeaderKey(name) != "Connection" {
			continue
		}
		for _, v := range values {
			for option := range strings.SplitSeq(v, ",") {
				if option = strings.ToLower(strings.TrimSpace(option)); option != "" {
					options[option] = true
				}
			}
		}
	}
	return options
}

// deleteAnyCase deletes the header name from h under every spelling it has there: a header
// map filled by hand, or by an HTTP/2 peer sending names Go cannot canonicalize, may hold it
// other than canonically.
func deleteAnyCase(h http.Header, name string) {
	for key := range h {
		if strings.EqualFold(key, name) {
			delete(h, key)
		}
	}
}
