package aggregatedapi

import (
	"net/http"

	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericapiserver "k8s.io/apiserver/pkg/server"
)

// The generic API server closes an HTTP/2 connection after every anonymous request, so that
// unauthenticated clients cannot hold expensive connections open (CVE-2023-44487). Behind the
// aggregation layer that is wrong for us: the connection belongs to the kube-apiserver, which
// authenticated with its front-proxy client certificate and multiplexes every user's requests over
// it, and some requests are anonymous by design (the Concierge's TokenCredentialRequest). Each
// such request would close the shared connection and the requests in flight on it would fail
// with 503. So the library's mitigation is turned off (SetFeatureGates) and applied here only to
// connections that presented no client certificate.

// BuildHandlerChain is the default chain with our mitigation innermost, where the user is known.
func BuildHandlerChain(apiHandler http.Handler, c *genericapiserver.Config) http.Handler {
	return genericapiserver.DefaultBuildHandlerChain(closeUnauthenticatedHTTP2(apiHandler), c)
}

// closeUnauthenticatedHTTP2 asks the HTTP/2 server to close the connection after this request when
// an anonymous user sent it over a connection without a client certificate.
func closeUnauthenticatedHTTP2(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 && (r.TLS == nil || len(r.TLS.PeerCertificates) == 0) {
			if u, ok := genericapirequest.UserFrom(r.Context()); !ok || isAnonymous(u) {
				w.Header().Set("Connection", "close")
			}
		}
		next.ServeHTTP(w, r)
	})
}

func isAnonymous(u user.Info) bool {
	if u.GetName() == user.Anonymous {
		return true
	}
	for _, g := range u.GetGroups() {
		if g == user.AllUnauthenticated {
			return true
		}
	}
	return false
}
