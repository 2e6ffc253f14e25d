package impersonator

import (
	"net/http"
	"net/url"
	"sort"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apiserver/pkg/authentication/user"
)

// scrubbedPrefixes are the canonical header prefixes a client could use to claim an identity at
// the kube-apiserver: impersonation and front-proxy (request-header) authentication.
var scrubbedPrefixes = []string{"Impersonate-", "X-Remote-"}

// scrubIdentityHeaders removes every header that carries an identity or a credential, so that
// nothing the client sent can speak for it at the kube-apiserver: the proxy sets them afresh.
func scrubIdentityHeaders(h http.Header) {
	for name := range h {
		canonical := http.CanonicalHeaderKey(name)
		if canonical == "Authorization" {
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
