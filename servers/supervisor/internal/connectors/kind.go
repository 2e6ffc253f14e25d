package connectors

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	idpclient "sealion.dev/core/generated/supervisor/clientset/versioned/typed/idp/v1alpha1"
	idpinformers "sealion.dev/core/generated/supervisor/informers/externalversions/idp/v1alpha1"
	"sealion.dev/core/tracing"
	"sealion.dev/servers/internal/tlsprofile"
	"sealion.dev/servers/supervisor/internal/issuer"
)

// Object is an identity provider object of the API, such as *idpv1alpha1.OIDCIdentityProvider.
// Every kind has the same status, which IdentityProviderStatus points at.
type Object interface {
	metav1.Object
	runtime.Object
	IdentityProviderStatus() *idpv1alpha1.IdentityProviderStatus
}

// Inputs are what a factory reads besides its object, all in the object's namespace.
type Inputs struct {
	// Secret returns the Secret name, or nil when it does not exist.
	Secret func(name string) (*corev1.Secret, error)
	// CABundle resolves the TLS spec at field (spec.tls, say; errors name it): a PEM bundle, nil for
	// the system roots, or a *cabundle.Error.
	CABundle func(field string, spec *idpv1alpha1.TLSSpec) ([]byte, error)
	// Probes remembers the object's last successful probe (see Probe).
	Probes *ProbeCache
	Settings
}

// Settings are the Supervisor's static configuration of every connector.
type Settings struct {
	// TLSProfile is the Supervisor's, which tls.onedottwo.allowedCiphers narrows; it also sets
	// the TLS 1.2 ciphers offered to LDAP servers.
	TLSProfile tlsprofile.Profile
	// IgnoreUserInfoIssuers are the OIDC issuers whose userinfo endpoint is never read
	// (oidc.ignoreUserInfoEndpoint.whenIssuerExactlyMatches).
	IgnoreUserInfoIssuers []string
	// ConnectTimeout bounds connecting to an upstream, TLS handshake included
	// (upstreams.connectTimeoutSeconds); DefaultConnectTimeout when zero.
	ConnectTimeout time.Duration
}

// DefaultConnectTimeout is the configuration's default for ConnectTimeout.
const DefaultConnectTimeout = 10 * time.Second

// connectTimeout is ConnectTimeout, defaulted.
func (s Settings) connectTimeout() time.Duration {
	if s.ConnectTimeout > 0 {
		return s.ConnectTimeout
	}
	return DefaultConnectTimeout
}

// Dialer connects to upstreams within the connect timeout. Without it, a connection to an
// upstream that drops packets waits for the kernel to give up, minutes later.
func (s Settings) Dialer() *net.Dialer {
	return &net.Dialer{Timeout: s.connectTimeout(), KeepAlive: 30 * time.Second}
}

// HTTPTransport is a transport to HTTPS upstreams with tlsConfig that connects, and completes
// the TLS handshake, within the connect timeout; otherwise net/http's default transport. Within a
// recorded trace each request is a span, and the upstream gets the trace context.
func (s Settings) HTTPTransport(tlsConfig *tls.Config) http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = s.Dialer().DialContext
	t.TLSHandshakeTimeout = s.connectTimeout()
	t.TLSClientConfig = tlsConfig
	return tracing.Transport(t)
}

// Factory opens an object: it checks the object with its inputs, probes the upstream, and
// returns the status conditions and, when they are all true, the connector. When the probe failed
// only because the upstream could not be reached (Unreachable) and a probe of the same inputs
// succeeded before, it returns the connector of those inputs with the failed condition: logins and
// refreshes still try the upstream, and succeed as soon as it is back, while the status shows the
// outage. An unusable object shows in its conditions; an error means the inputs could not be
// read, and the object is tried again.
type Factory[T Object] func(ctx context.Context, obj T, in Inputs) (Connector, []metav1.Condition, error)

// Kind is one kind of identity provider object: its name and login type, the flows its objects
// support, where its objects are watched and how their status is written, and its factory. Make
// one with Define.
type Kind struct {
	// Name is the object kind, as FederationDomains refer to it.
	Name string
	// Type is the identity provider type of its logins, as discovery, the authorize endpoint and
	// stored sessions name it.
	Type issuer.IdentityProviderType

	informer     func(idpinformers.Interface) cache.SharedIndexInformer
	flows        func(obj any) []issuer.Flow
	open         func(ctx context.Context, obj any, in Inputs) (Connector, []metav1.Condition, error)
	updateStatus func(ctx context.Context, client idpclient.IdpV1alpha1Interface, obj any) error
}

// Define describes the kind name of objects T with the login type typ: flows are the login flows
// an object supports, the preferred one first; informer and client are the methods of the
// generated informers and clients that serve T (such as
// idpinformers.Interface.OIDCIdentityProviders); open is its factory.
func Define[T Object, I interface {
	Informer() cache.SharedIndexInformer
}, C interface {
	UpdateStatus(context.Context, T, metav1.UpdateOptions) (T, error)
}](
	name string, typ issuer.IdentityProviderType, flows func(T) []issuer.Flow,
	informer func(idpinformers.Interface) I, client func(idpclient.IdpV1alpha1Interface, string) C, open Factory[T],
) Kind {
	return Kind{
		Name:     name,
		Type:     typ,
		informer: func(f idpinformers.Interface) cache.SharedIndexInformer { return informer(f).Informer() },
		flows:    func(obj any) []issuer.Flow { return flows(obj.(T)) },
		open: func(ctx context.Context, obj any, in Inputs) (Connector, []metav1.Condition, error) {
			return open(ctx, obj.(T), in)
		},
		updateStatus: func(ctx context.Context, c idpclient.IdpV1alpha1Interface, obj any) error {
			o := obj.(T)
			_, err := client(c, o.GetNamespace()).UpdateStatus(ctx, o, metav1.UpdateOptions{})
			return err
		},
	}
}

// Informer is the shared informer of the kind's objects.
func (k Kind) Informer(f idpinformers.Interface) cache.SharedIndexInformer { return k.informer(f) }

// Flows are the login flows obj supports, the preferred one first.
func (k Kind) Flows(obj Object) []issuer.Flow { return k.flows(obj) }

// Open runs the kind's factory on obj.
func (k Kind) Open(ctx context.Context, obj Object, in Inputs) (Connector, []metav1.Condition, error) {
	return k.open(ctx, obj, in)
}

// Status returns the status of obj, which must be of the kind.
func (k Kind) Status(obj Object) idpv1alpha1.IdentityProviderStatus {
	return *obj.IdentityProviderStatus()
}

// UpdateStatus writes status as the status of obj: it updates a copy of obj, which stays as it
// was, with the kind's client.
func (k Kind) UpdateStatus(ctx context.Context, client idpclient.IdpV1alpha1Interface, obj Object, status idpv1alpha1.IdentityProviderStatus) error {
	updated := obj.DeepCopyObject().(Object)
	*updated.IdentityProviderStatus() = status
	return k.updateStatus(ctx, client, updated)
}
