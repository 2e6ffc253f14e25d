package impersonator

import (
	"cmp"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/group"
	"k8s.io/apiserver/pkg/authentication/request/anonymous"
	"k8s.io/apiserver/pkg/authentication/request/bearertoken"
	unionauth "k8s.io/apiserver/pkg/authentication/request/union"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	tokencache "k8s.io/apiserver/pkg/authentication/token/cache"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	genericapifilters "k8s.io/apiserver/pkg/endpoints/filters"
	"k8s.io/apiserver/pkg/endpoints/filters/impersonation"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	genericfilters "k8s.io/apiserver/pkg/server/filters"
	webhooktoken "k8s.io/apiserver/plugin/pkg/authenticator/token/webhook"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"sealion.dev/core/tracing"
	"sealion.dev/servers/concierge/internal/certextra"
	"sealion.dev/servers/internal/drain"
)

// Config is what New needs.
type Config struct {
	// APIServer reaches the real kube-apiserver as a ServiceAccount allowed to impersonate users,
	// groups, service accounts, UIDs and user extras: the proxy's own (see package satoken).
	APIServer *rest.Config
	// Authenticator authenticates requests; see DelegatedAuthenticator. A user it returns from a
	// bearer token is recognised for pass-through only through TokenAuthenticated.
	Authenticator authenticator.Request
	// Authorizer decides both nested impersonation and the end user's request; see DelegatedAuthorizer.
	Authorizer authorizer.Authorizer
	// TokenCredentialRequests answers POSTs to TokenCredentialRequestPath anonymously; nil forwards them.
	TokenCredentialRequests http.Handler
	// TokenCredentialRequestPath is /apis/login.concierge.<suffix>/v1alpha1/tokencredentialrequests.
	TokenCredentialRequestPath string
	// MaxRequestsInFlight and MaxMutatingRequestsInFlight are DefaultMaxRequestsInFlight and
	// DefaultMaxMutatingRequestsInFlight when zero, MaxQueueWait DefaultMaxQueueWait.
	MaxRequestsInFlight, MaxMutatingRequestsInFlight int
	MaxQueueWait                                     time.Duration
	// TracerProvider, when the Concierge traces, makes a span of each request (continuing the
	// client's trace, as the kube-apiserver would) and passes the trace on to the kube-apiserver
	// in place of the client's traceparent. Nil makes no span, and a client's trace context
	// reaches the kube-apiserver as the client sent it, as without the proxy.
	TracerProvider trace.TracerProvider
}

// FlushInterval is how often streamed responses (watches, logs -f) are flushed to the client.
const FlushInterval = 200 * time.Millisecond

// New returns the proxy's HTTP handler. It serves on TLS connections that asked for (but did not
// require) a client certificate, so that certificate, token and anonymous clients share one port.
func New(c Config) (http.Handler, error) {
	if c.APIServer == nil || c.Authenticator == nil || c.Authorizer == nil {
		return nil, errors.New("impersonator: APIServer, Authenticator and Authorizer are required")
	}
	traced := c.TracerProvider != nil
	asServiceAccount, err := newForwarder(c.APIServer, traced)
	if err != nil {
		return nil, fmt.Errorf("impersonator: proxy transport with the ServiceAccount's credentials: %w", err)
	}
	// Anonymous requests and passed-through tokens reach the kube-apiserver with no credentials of
	// ours, so it decides about them exactly as it would without the proxy.
	withoutCredentials, err := newForwarder(rest.AnonymousClientConfig(c.APIServer), traced)
	if err != nil {
		return nil, fmt.Errorf("impersonator: proxy transport without credentials: %w", err)
	}
	codecs := clientgoscheme.Codecs.WithoutConversion()
	resolver := &genericapirequest.RequestInfoFactory{
		APIPrefixes:          sets.NewString("api", "apis"),
		GrouplessAPIPrefixes: sets.NewString("api"),
	}

	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		forward(w, r, asServiceAccount, withoutCredentials)
	})
	h = withAuthorizationUnlessAnonymous(h, genericapifilters.WithAuthorization(h, c.Authorizer, codecs))
	h = impersonation.WithImpersonation(h, c.Authorizer, codecs)
	h = withOriginalUser(h)
	h = genericapifilters.WithAuthentication(h, c.Authenticator, genericapifilters.Unauthorized(codecs), nil, nil)
	h = withTokenSlot(h)
	if c.TokenCredentialRequests != nil {
		h = withTokenCredentialRequests(h, c.TokenCredentialRequestPath, c.TokenCredentialRequests)
	}
	// Limits come before authentication, which costs the cluster TokenReviews: a flood of
	// requests is refused here, whoever sends it.
	h = withRequestBodyLimit(h)
	h, err = withFairQueuing(h, cmp.Or(c.MaxRequestsInFlight, DefaultMaxRequestsInFlight),
		cmp.Or(c.MaxMutatingRequestsInFlight, DefaultMaxMutatingRequestsInFlight), cmp.Or(c.MaxQueueWait, DefaultMaxQueueWait))
	if err != nil {
		return nil, fmt.Errorf("impersonator: %w", err)
	}
	h = withMetrics(h)
	h = withSpanNamed(h)
	h = genericapifilters.WithRequestInfo(h, resolver)
	// After the hop-by-hop headers are gone: a client's trace context is an end-to-end header.
	h = tracing.Handler(h, c.TracerProvider, "impersonation proxy")
	h = withHopByHopHeadersRemoved(h)
	h = genericfilters.WithPanicRecovery(h, resolver)
	return h, nil
}

// withTokenCredentialRequests answers credential exchanges before authentication: a client that
// has no credential yet must be able to get one, even where the cluster refuses anonymous requests.
func withTokenCredentialRequests(next http.Handler, path string, tcr http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == path {
			tcr.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// withAuthorizationUnlessAnonymous sends anonymous requests straight on: they reach the
// kube-apiserver without credentials, so it decides about them, and answers 401 where anonymous
// authentication is off (AKS) instead of a 403 from the proxy's own SubjectAccessReview.
// Impersonation was authorized before this point, so an anonymous client cannot become anyone else.
func withAuthorizationUnlessAnonymous(forward, authorized http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, ok := genericapirequest.UserFrom(r.Context()); ok && isAnonymous(u) {
			forward.ServeHTTP(w, r)
			return
		}
		authorized.ServeHTTP(w, r)
	})
}

// forwarder proxies to the kube-apiserver through one set of credentials: upgrades (exec,
// attach, port-forward) through the apiserver's upgrade-aware handler, whose copy to the client
// coalesces small reads and whose close lingers (streamHijacker), every other request
// through one reverse proxy that reuses its copy buffers. The upgrade-aware handler builds a
// reverse proxy per request with a fresh 32 KiB buffer: a third of what the proxy allocated under
// a load of GETs, each byte of it to be collected again.
type forwarder struct {
	upgrades *proxy.UpgradeAwareHandler
	requests *httputil.ReverseProxy
}

func newForwarder(c *rest.Config, traced bool) (*forwarder, error) {
	host, _, err := rest.DefaultServerUrlFor(c)
	if err != nil {
		return nil, err
	}
	// Ordinary requests may use HTTP/2; upgrades need HTTP/1.1, which the upgrade dialer
	// negotiates, with the same credentials added by the config's wrappers. Both set the identity
	// last (identityTransport).
	base, err := rest.TransportFor(c)
	if err != nil {
		return nil, err
	}
	wrappers, err := rest.HTTPWrappersForConfig(c, proxy.MirrorRequest)
	if err != nil {
		return nil, err
	}
	rt := identityTransport{next: base}
	target := &url.URL{Scheme: host.Scheme, Host: host.Host, Path: host.Path}
	upgrades := proxy.NewUpgradeAwareHandler(target, rt, false, true, errorResponder{})
	upgrades.UpgradeTransport = proxy.NewUpgradeRequestRoundTripper(rt, identityTransport{next: wrappers})
	upgrades.UseRequestLocation = true
	upgrades.AppendLocationPath = host.Path != "" && host.Path != "/"
	requests := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			// The kube-apiserver records X-Forwarded-For as the audit event's source IPs: the
			// client's address, as the upgrade-aware handler forwards it.
			if ip, _, err := net.SplitHostPort(pr.In.RemoteAddr); err == nil {
				pr.Out.Header.Set("X-Forwarded-For", ip)
			}
		},
		// A watch ends at an event boundary when the proxy stops (see endWatchOnStop).
		ModifyResponse: func(res *http.Response) error {
			ctx := res.Request.Context()
			if info, ok := genericapirequest.RequestInfoFrom(ctx); ok && info.Verb == "watch" {
				endWatchOnStop(res, drain.Signal(ctx))
			}
			return nil
		},
		Transport:     rt,
		FlushInterval: FlushInterval,
		BufferPool:    copyBuffers,
		ErrorHandler:  errorResponder{}.Error,
		ErrorLog:      klog.NewStandardLogger("ERROR"),
	}
	if traced {
		// Upgrades keep the upgrade-aware handler's own transports: their server span covers the
		// stream, and the kube-apiserver gets the client's trace context as sent.
		requests.Transport = tracing.Transport(rt)
	}
	return &forwarder{upgrades: upgrades, requests: requests}, nil
}

// withSpanNamed names the request's span (when one is recording) after its verb, a bounded set,
// and notes the resource and its group: a name made of the path would let a client mint as many
// span names as it likes.
func withSpanNamed(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if span := trace.SpanFromContext(r.Context()); span.IsRecording() {
			if info, ok := genericapirequest.RequestInfoFrom(r.Context()); ok {
				span.SetName("impersonation proxy " + info.Verb)
				if info.IsResourceRequest {
					span.SetAttributes(attribute.String("k8s.resource", info.Resource), attribute.String("k8s.api_group", info.APIGroup))
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (f *forwarder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if httpstream.IsUpgradeRequest(r) {
		f.upgrades.ServeHTTP(streamHijacker{w}, r)
		return
	}
	f.requests.ServeHTTP(w, r)
}

// copyBuffers are the response copy buffers, of the size the reverse proxy would allocate.
var copyBuffers = &bufferPool{pool: sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}}

type bufferPool struct{ pool sync.Pool }

func (p *bufferPool) Get() []byte  { return *p.pool.Get().(*[]byte) }
func (p *bufferPool) Put(b []byte) { p.pool.Put(&b) }

// forward sends r on as the user the chain settled on. The identity travels in the request's
// context to identityTransport, which alone writes it into the headers.
func forward(w http.ResponseWriter, r *http.Request, asServiceAccount, withoutCredentials *forwarder) {
	u, ok := genericapirequest.UserFrom(r.Context())
	if !ok {
		http.Error(w, "no user in the request context", http.StatusInternalServerError)
		return
	}
	var identity http.Header
	next := withoutCredentials
	switch {
	case isAnonymous(u):
		identity = http.Header{}
	case passThroughToken(r.Context(), u) != "":
		// A token's owner with a UID (a ServiceAccount, say) keeps its own credential: the
		// kube-apiserver then sees exactly what it would see without the proxy.
		identity = http.Header{"Authorization": {"Bearer " + passThroughToken(r.Context(), u)}}
	default:
		u, err := withOriginalUserInfo(r.Context(), u)
		if err != nil {
			writeStatus(w, http.StatusForbidden, metav1.StatusReasonForbidden, err.Error())
			return
		}
		identity, next = impersonationHeaders(u), asServiceAccount
	}
	r = r.Clone(withIdentity(r.Context(), identity))
	scrubClientHeaders(r.Header)
	next.ServeHTTP(w, r)
}

func isAnonymous(u user.Info) bool {
	return u.GetName() == user.Anonymous
}

type errorResponder struct{}

func (errorResponder) Error(w http.ResponseWriter, r *http.Request, err error) {
	if isTooLarge(err) {
		writeTooLarge(w)
		return
	}
	klog.FromContext(r.Context()).Error(err, "impersonation proxy could not reach the kube-apiserver", "path", r.URL.Path)
	http.Error(w, "the impersonation proxy could not reach the kube-apiserver", http.StatusBadGateway)
}

// tokenSlot records, for one request, which user a bearer token authenticated as.
type tokenSlot struct {
	token string
	user  user.Info
}

type tokenSlotKey struct{}

// withTokenSlot gives each request a slot that TokenAuthenticated fills; the authentication
// filter removes the Authorization header, so the token is kept here for pass-through.
func withTokenSlot(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tokenSlotKey{}, &tokenSlot{})))
	})
}

// passThroughToken returns the bearer token to forward for u: set only when u is the user a token
// authenticated as (not someone it impersonates) and that user has a UID.
func passThroughToken(ctx context.Context, u user.Info) string {
	slot, _ := ctx.Value(tokenSlotKey{}).(*tokenSlot)
	if slot == nil || slot.user == nil || slot.user.GetUID() == "" {
		return ""
	}
	if slot.user.GetName() != u.GetName() || slot.user.GetUID() != u.GetUID() {
		return ""
	}
	return slot.token
}

// TokenAuthenticated wraps a token authenticator so that the proxy can pass successfully
// authenticated tokens through.
func TokenAuthenticated(t authenticator.Token) authenticator.Token {
	return authenticator.TokenFunc(func(ctx context.Context, token string) (*authenticator.Response, bool, error) {
		resp, ok, err := t.AuthenticateToken(ctx, token)
		if ok && err == nil {
			if slot, _ := ctx.Value(tokenSlotKey{}).(*tokenSlot); slot != nil {
				slot.token, slot.user = token, resp.User
			}
		}
		return resp, ok, err
	})
}

// TokenReviewCacheTTL is how long a TokenReview answer is reused.
const TokenReviewCacheTTL = 10 * time.Second

// ClientCAs are the CAs whose client certificates the proxy accepts.
type ClientCAs struct {
	// Own is the CA of the proxy's own signer, whose key only the Concierge holds: its
	// certificates carry the user's extras in their OUs (package certextra).
	Own dynamiccertificates.CAContentProvider
	// Others are read as the kube-apiserver reads them, OUs ignored: the cluster's client CA and
	// its signing key sign certificates for anyone whose CSR is approved (kubelets' among them),
	// with whatever OUs they asked for.
	Others []dynamiccertificates.CAContentProvider
}

// DelegatedAuthenticator authenticates client certificates signed by one of cas, bearer tokens by
// TokenReview at the kube-apiserver, and everything else as system:anonymous (which the proxy
// forwards without credentials, leaving the decision to the cluster).
func DelegatedAuthenticator(kube kubernetes.Interface, cas ClientCAs) (authenticator.Request, error) {
	backoff := wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}
	tokenReview, err := webhooktoken.NewFromInterface(kube.AuthenticationV1(), nil, backoff, 10*time.Second,
		webhooktoken.AuthenticatorMetrics{
			RecordRequestTotal:   authenticatorfactory.RecordRequestTotal,
			RecordRequestLatency: authenticatorfactory.RecordRequestLatency,
		})
	if err != nil {
		return nil, fmt.Errorf("impersonator: TokenReview authenticator: %w", err)
	}
	tokens := TokenAuthenticated(tokencache.New(tokenReview, false, TokenReviewCacheTTL, TokenReviewCacheTTL))
	// One certificate authenticator per CA: each keeps its own parsed pool, where a union of the
	// bundles would be re-parsed on every request.
	var authenticators []authenticator.Request
	if cas.Own != nil {
		authenticators = append(authenticators, newCachedCertificateAuthenticator(cas.Own.VerifyOptions, ownCertificateUser))
	}
	for _, ca := range cas.Others {
		authenticators = append(authenticators, newCachedCertificateAuthenticator(ca.VerifyOptions, x509request.CommonNameUserConversion))
	}
	authenticators = append(authenticators, bearertoken.New(tokens))
	known := group.NewAuthenticatedGroupAdder(unionauth.New(authenticators...))
	return unionauth.NewFailOnError(known, anonymous.NewAuthenticator(nil)), nil
}

// ownCertificateUser reads a certificate of the proxy's own signer as the kube-apiserver reads a
// client certificate (CN the username, O the groups, the certificate's hash as credential-id) and
// adds the user extras the Concierge carried in its OUs (package certextra), validated as the
// credential exchange validates an authenticator's: through the proxy, a user keeps the extras
// its authenticator gave it. A credential-id from the token is added to the certificate's own.
var ownCertificateUser = x509request.UserConversionFunc(func(chain []*x509.Certificate) (*authenticator.Response, bool, error) {
	resp, ok, err := x509request.CommonNameUserConversion.User(chain)
	if err != nil || !ok {
		return resp, ok, err
	}
	carried, err := certextra.FromOrganizationalUnits(chain[0].Subject.OrganizationalUnit)
	if err == nil {
		err = certextra.Validate(carried)
	}
	if err != nil || carried == nil {
		return resp, err == nil, err
	}
	extra := maps.Clone(resp.User.GetExtra())
	if extra == nil {
		extra = make(map[string][]string, len(carried))
	}
	for k, v := range carried {
		extra[k] = append(extra[k], v...)
	}
	resp.User = &user.DefaultInfo{Name: resp.User.GetName(), Groups: resp.User.GetGroups(), Extra: extra}
	return resp, true, nil
})

// DelegatedAuthorizer asks the kube-apiserver with SubjectAccessReviews, caching answers briefly.
func DelegatedAuthorizer(kube kubernetes.Interface) (authorizer.Authorizer, error) {
	backoff := wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}
	a, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: kube.AuthorizationV1(),
		AllowCacheTTL:             10 * time.Second,
		DenyCacheTTL:              10 * time.Second,
		WebhookRetryBackoff:       &backoff,
	}.New()
	if err != nil {
		return nil, fmt.Errorf("impersonator: SubjectAccessReview authorizer: %w", err)
	}
	return a, nil
}
