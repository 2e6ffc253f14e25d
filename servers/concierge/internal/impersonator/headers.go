package impersonator

import (
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apiserver/pkg/authentication/user"
)

// scrubbedPrefixes are the canonical header prefixes a client could use to claim an identity at
// the kube-apiserver: impersonation and front-proxy (request-header) authentication.
var scrubbedPrefixes = []string{"Impersonate-", "X-Remote-"}

// scrubbedHeaders are the canonical names of the other headers the proxy sets itself or that
// claim something only a proxy may say: the credential, and where the request came from (the
// kube-apiserver records X-Forwarded-For and X-Real-Ip as the source IPs of its audit events;
// the proxy's forwarder appends the real client address to an X-Forwarded-For of its own).
var scrubbedHeaders = []string{"Authorization", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Real-Ip", "Forwarded"}

// scrubClientHeaders removes every header that carries an identity, a credential or a claim
// about the client's address, so that nothing the client sent can speak for it at the
// kube-apiserver: the proxy sets them afresh.
func scrubClientHeaders(h http.Header) {
	for name := range h {
		canonical := http.CanonicalHeaderKey(name)
		if slices.Contains(scrubbedHeaders, canonical) {
			delete(h, name)
			continue
		}
		for _, p := range scrubbedPrefixes {
			if strings.HasPrefix(canonical, p) {
				delete(h, name)
				break
			}
		}
	}
}

// setImpersonationHeaders makes h ask the kube-apiserver to act as u.
func setImpersonationHeaders(h http.Header, u user.Info) {
	h.Set(authenticationv1.ImpersonateUserHeader, u.GetName())
	if uid := u.GetUID(); uid != "" {
		h.Set(authenticationv1.ImpersonateUIDHeader, uid)
	}
	for _, g := range u.GetGroups() {
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
}
