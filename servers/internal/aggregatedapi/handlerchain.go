package aggregatedapi

import (
	"net/http"

	genericapiserver "k8s.io/apiserver/pkg/server"
)

// Our aggregated API servers have one client, the kube-apiserver's aggregator, which sends every
// user's requests for a replica over its connections to that replica. When a replica stops,
// those connections must move to the other replicas without failing a request the aggregator has
// sent. Over HTTP/2 that cannot be done: a connection ends with a GOAWAY, and the requests the
// aggregator sends while it is on its way are refused; the aggregator cannot send them again (it
// streams each request's body from its own client) and answers them 503, "the server is
// currently unable to handle the request" (kubernetes/kubernetes#135285). A rolling restart under
// load failed a few exchanges that way. So the servers speak HTTP/1.1 (applyTLS), and from the
// moment a server starts stopping every response says "Connection: close": the aggregator reads
// it with the response, closes that connection, and opens its next one to a ready replica.

// BuildHandlerChain is the generic server's default chain, whose responses close their
// connections once the server has begun to stop.
func BuildHandlerChain(apiHandler http.Handler, c *genericapiserver.Config) http.Handler {
	return closeWhenStopping(genericapiserver.DefaultBuildHandlerChain(apiHandler, c), c.ShutdownInitiatedNotify())
}

func closeWhenStopping(next http.Handler, stopping <-chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-stopping:
			w.Header().Set("Connection", "close")
		default:
		}
		next.ServeHTTP(w, r)
	})
}
