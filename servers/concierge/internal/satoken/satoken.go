// Package satoken lets the impersonation proxy reach the kube-apiserver as a ServiceAccount of
// its own, one allowed only to impersonate, as Pinniped's does: the Concierge's ServiceAccount
// asks the TokenRequest API for that account's tokens and renews each well before it expires.
package satoken

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/oauth2"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
	"k8s.io/utils/ptr"
)

// lifetime is the validity asked for each token; a token is replaced after renewAfter of it.
const (
	lifetime       = time.Hour
	renewAfter     = 0.8
	requestTimeout = 30 * time.Second
)

// Config returns base without its credentials, authenticating instead as the ServiceAccount
// namespace/name with tokens that client (the Concierge's own) requests. A token is requested at
// the first request and renewed at 80% of its life; when a renewal fails, the token in hand is
// used while it lasts, and a 401 from the kube-apiserver has the next request get a new one.
func Config(base *rest.Config, client corev1client.ServiceAccountsGetter, namespace, name string) *rest.Config {
	c := rest.AnonymousClientConfig(base)
	source := transport.NewCachedTokenSource(&tokenSource{client: client.ServiceAccounts(namespace), namespace: namespace, name: name, now: time.Now})
	c.WrapTransport = transport.ResettableTokenSourceWrapTransport(source)
	return c
}

// tokenSource requests a new token at each call.
type tokenSource struct {
	client          corev1client.ServiceAccountInterface
	namespace, name string
	now             func() time.Time
}

// Token is part of the oauth2.TokenSource interface. Its Expiry is when to renew, before the
// token's own expiry.
func (s *tokenSource) Token() (*oauth2.Token, error) {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	requested := s.now()
	tr, err := s.client.CreateToken(ctx, s.name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(lifetime / time.Second))},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("requesting a token for the impersonation proxy's ServiceAccount %s/%s: %w", s.namespace, s.name, err)
	}
	if tr.Status.Token == "" {
		return nil, fmt.Errorf("requesting a token for the impersonation proxy's ServiceAccount %s/%s: the response holds none", s.namespace, s.name)
	}
	// The kube-apiserver may shorten or lengthen the lifetime asked for.
	life := tr.Status.ExpirationTimestamp.Sub(requested)
	return &oauth2.Token{
		AccessToken: tr.Status.Token,
		TokenType:   "Bearer",
		Expiry:      requested.Add(time.Duration(float64(life) * renewAfter)),
	}, nil
}
