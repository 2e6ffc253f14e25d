// Package impersonator is the Concierge's impersonation proxy: an HTTPS handler that authenticates
// a request itself (client certificates from the cluster's client CA or the proxy's own signer,
// whose OUs alone carry user extras; bearer tokens by TokenReview), applies nested impersonation (`kubectl --as`, authorized by
// SubjectAccessReviews for the impersonate verb as the kube-apiserver does), authorizes the end
// user with a SubjectAccessReview, and forwards the request to the real kube-apiserver as the
// Concierge's ServiceAccount with Impersonate-* headers naming that user; after a nested
// impersonation they carry the authenticated user in the extra OriginalUserInfoExtraKey. A bearer
// token whose owner has a UID (a ServiceAccount's) is passed through instead, as the kube-apiserver
// would see it without the proxy. It exists for clusters whose signing key the Concierge cannot
// reach (managed clusters): certificates signed by the proxy's signer are valid here and nowhere
// else.
//
// Hop-by-hop headers are removed before anything reads the request (hopbyhop.go), and the
// identity is written into the forwarded request by its transport, after the reverse proxy
// (identityTransport), so that no header a client sends can remove or replace it.
//
// Before authentication, the kube-apiserver's own limits apply (limits.go): at most 400 requests
// and 200 mutating ones in flight, watches and streams not counted, and 3 MiB request bodies.
//
// The handler chain is assembled from k8s.io/apiserver filters rather than a full generic API
// server: the proxy serves no APIs of its own apart from an anonymous TokenCredentialRequest
// endpoint, so storage, admission, OpenAPI and audit would be dead weight.
package impersonator
