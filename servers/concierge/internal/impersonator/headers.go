package impersonator

import (
	"context"
	"errors"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"sort"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apiserver/pkg/authentication/user"
)

// identityPrefixes are the canonical header prefixes that claim an identity at the
// kube-apiserver: impersonation and front-proxy (request-header) authentication.
var identityPrefixes = []string{"Impersonate-", "X-Remote-"}

// forwardingHeaders are the canonical names of the headers that claim where the request came
// from (the kube-apiserver records X-Forwarded-For and X-Real-Ip as the source IPs of its audit
// events; the proxy's forwarder appends the real client address to an X-Forwarded-For of its own).
var forwardingHeaders = []string{"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Real-Ip", "Forwarded"}

// scrubClientHeaders removes every header that carries an identity, a credential or a claim
// about the client's address, so that nothing the client sent can speak for it at the
// kube-apiserver: the proxy sets them afresh (the identity in identityTransport).
func scrubClientHeaders(h http.Header) {
	for name := range h {
		if isIdentityHeader(name) || slices.Contains(forwardingHeaders, canonicalName(name)) {
			delete(h, name)
		}
	}
}

// isIdentityHeader reports whether the header name, in any case and with "_" for "-", carries
// a credential or an identity.
func isIdentityHeader(name string) bool {
	canonical := canonicalName(name)
	if canonical == "Authorization" {
		return true
	}
	for _, p := range identityPrefixes {
		if strings.HasPrefix(canonical, p) {
			return true
		}
	}
	return false
}

// canonicalName is name as Go canonicalizes header names, with "_" read as "-": some servers and
// proxies in front of a kube-apiserver treat the two alike, so the proxy does too.
func canonicalName(name string) string {
	return textproto.CanonicalMIMEHeaderKey(strings.ReplaceAll(name, "_", "-"))
}

// impersonationHeaders are the headers that make the kube-apiserver act as u.
//
// A trailing system:authenticated is left out where the kube-apiserver appends it itself: after
// other groups (with none, it would give a ServiceAccount's name the ServiceAccount's groups), for
// any user but system:anonymous, when no other group is system:authenticated or
// system:unauthenticated. The user it acts as is the same, and it authorizes one impersonation
// fewer (one RBAC evaluation, on every request through the proxy).
func impersonationHeaders(u user.Info) http.Header {
	h := http.Header{}
	h.Set(authenticationv1.ImpersonateUserHeader, u.GetName())
	if uid := u.GetUID(); uid != "" {
		h.Set(authenticationv1.ImpersonateUIDHeader, uid)
	}
	for _, g := range withoutImpliedAuthenticated(u.GetName(), u.GetGroups()) {
		h.Add(authenticationv1.ImpersonateGroupHeader, g)
	}
	keys := make([]string, 0, len(u.GetExtra()))
	for k := range u.GetExtra() {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		// Extra keys may contain characters a header name cannot; the kube-apiserver unescapes them.
		name := authenticationv1.ImpersonateUserExtraHeaderPrefix + url.PathEscape(k)
		for _, v := range u.GetExtra()[k] {
			h.Add(name, v)
		}
	}
	return h
}

// withoutImpliedAuthenticated is groups without a last system:authenticated that the
// kube-apiserver would add back for username in the same place; see impersonationHeaders.
func withoutImpliedAuthenticated(username string, groups []string) []string {
	n := len(groups)
	if n < 2 || groups[n-1] != user.AllAuthenticated || username == user.Anonymous {
		return groups
	}
	others := groups[:n-1]
	if slices.Contains(others, user.AllAuthenticated) || slices.Contains(others, user.AllUnauthenticated) {
		return groups
	}
	return others
}

type identityKey struct{}

// withIdentity returns ctx carrying the identity headers of the request to the kube-apiserver:
// the impersonation headers, a passed-through bearer token, or none (anonymous).
func withIdentity(ctx context.Context, identity http.Header) context.Context {
	return context.WithValue(ctx, identityKey{}, identity)
}

// errNoIdentity fails a request that reached the transport without an identity: a bug, and
// never a reason to send it with the ServiceAccount's credentials alone.
var errNoIdentity = errors.New("impersonator: no identity was chosen for the request")

// identityTransport sets, on each request as it leaves for the kube-apiserver, exactly the
// identity headers withIdentity put in its context, after removing any other identity header.
// It runs after httputil.ReverseProxy and the upgrade handler have done with the request, so
// that nothing a client sends (a Connection header naming Impersonate-User, say) can remove
// them, and before the credentials of the rest.Config are added (the ServiceAccount's token,
// which client-go adds only when no Authorization header is set).
type identityTransport struct{ next http.RoundTripper }

func (t identityTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	identity, ok := req.Context().Value(identityKey{}).(http.Header)
	if !ok {
		return nil, errNoIdentity
	}
	req = utilnet.CloneRequest(req)
	for name := range req.Header {
		if isIdentityHeader(name) {
			delete(req.Header, name)
		}
	}
	for name, values := range identity {
		req.Header[name] = slices.Clone(values)
	}
	return t.next.RoundTrip(req)
}

// WrappedRoundTripper lets client-go's dialer find the TLS configuration of the transport below.
func (t identityTransport) WrappedRoundTripper() http.RoundTripper { return t.next }
