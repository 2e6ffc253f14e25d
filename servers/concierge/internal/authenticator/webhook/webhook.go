// Package webhook builds a token authenticator that asks a remote HTTPS endpoint to review each
// token (a TokenReview, as kube-apiserver's webhook token authentication does), on the upstream
// Kubernetes webhook authenticator, and reports each validation step separately so a
// controller can publish them as status conditions.
//
// The steps, in order: the CA bundle parses (TLSConfigurationValid); the endpoint is an https
// URL whose proxy can be determined (EndpointURLValid); a TLS connection to it succeeds
// (WebhookConnectionValid); the upstream authenticator is built (AuthenticatorValid).
package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/url"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	upstreamwebhook "k8s.io/apiserver/plugin/pkg/authenticator/token/webhook"
	"k8s.io/client-go/rest"

	authv1alpha1 "sealion.dev/core/apis/concierge/authentication/v1alpha1"
	"sealion.dev/core/cabundle"
	"sealion.dev/servers/concierge/internal/authenticator/authnmetrics"
	"sealion.dev/servers/concierge/internal/authenticator/checks"
)

const (
	// DefaultAPIVersion is the TokenReview version posted when Config.APIVersion is empty;
	// v1beta1 is what existing Pinniped-compatible webhooks expect.
	DefaultAPIVersion = "v1beta1"

	dialTimeout    = 10 * time.Second
	requestTimeout = 30 * time.Second
)

// steps are the condition types New reports, in the order it checks them.
var steps = []string{
	authv1alpha1.ConditionTLSConfigurationValid, authv1alpha1.ConditionEndpointURLValid,
	authv1alpha1.ConditionWebhookConnectionValid, authv1alpha1.ConditionAuthenticatorValid,
}

// Config describes one webhook, as a WebhookAuthenticator spec does.
type Config struct {
	// Endpoint is the https URL TokenReviews are posted to.
	Endpoint string
	// CABundle is PEM CA certificates trusted for the endpoint; nil means the system roots.
	CABundle []byte
	// APIVersion is the authentication.k8s.io version of the TokenReview: "v1" or "v1beta1"
	// (the default).
	APIVersion string
}

// Authenticator authenticates tokens by posting them to the webhook.
type Authenticator struct {
	token authenticator.Token
}

var _ authenticator.Token = (*Authenticator)(nil)

// AuthenticateToken posts a TokenReview for the token and returns the user it names.
func (a *Authenticator) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	return a.token.AuthenticateToken(ctx, token)
}

// Close exists so both authenticator kinds can sit in one cache; the webhook authenticator
// holds no background work to release.
func (a *Authenticator) Close() {}

// New validates cfg step by step and, when every step passes, returns a ready authenticator.
// ctx bounds the connection probe. The returned checks always cover every condition type; the
// authenticator is nil unless all of them passed.
func New(ctx context.Context, cfg Config) (*Authenticator, checks.List) {
	var result checks.List
	fail := func(typ, reason, format string, args ...any) (*Authenticator, checks.List) {
		result.FailAndSkipRest(steps, typ, reason, format, args...)
		return nil, result
	}

	var roots *x509.CertPool
	tlsOK := true
	if cfg.CABundle != nil {
		roots = x509.NewCertPool()
		tlsOK = roots.AppendCertsFromPEM(cfg.CABundle)
	}
	if tlsOK {
		result.Pass(authv1alpha1.ConditionTLSConfigurationValid, cabundle.ValidMessage("spec.tls", cfg.CABundle))
	} else {
		result.Fail(authv1alpha1.ConditionTLSConfigurationValid, authv1alpha1.ReasonInvalidTLSConfig, "the CA bundle holds no PEM certificate")
	}
	// The endpoint is judged on its own, whatever the TLS configuration, as upstream does.
	endpoint, proxy, ok := CheckEndpointURL(&result, cfg.Endpoint)
	if !ok || !tlsOK {
		result.SkipAfter(steps, authv1alpha1.ConditionEndpointURLValid)
		return nil, result
	}

	if proxy != nil {
		// The upstream client connects through the proxy; a direct dial would test the wrong path.
		result.Pass(authv1alpha1.ConditionWebhookConnectionValid,
			"skipped dialing connection probe because HTTPS_PROXY is configured for use with the specified host")
	} else {
		if err := dialTLS(ctx, endpoint, roots); err != nil {
			return fail(authv1alpha1.ConditionWebhookConnectionValid, authv1alpha1.ReasonUnableToDialServer,
				"cannot dial server: %v", err)
		}
		result.Pass(authv1alpha1.ConditionWebhookConnectionValid, "successfully dialed webhook server")
	}

	restConfig := &rest.Config{
		Host:            cfg.Endpoint,
		TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CABundle},
		Timeout:         requestTimeout,
		// client-go otherwise throttles every client to 5 requests a second: that would cap webhook
		// logins at 5 a second for the whole Concierge. Load is bounded by the callers instead.
		QPS: -1,
	}
	restConfig.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return authnmetrics.Transport(authnmetrics.KindWebhook, rt)
	})
	if _, err := rest.HTTPClientFor(restConfig); err != nil {
		return fail(authv1alpha1.ConditionAuthenticatorValid, authv1alpha1.ReasonUnableToCreateClient,
			"unable to create client for this webhook: %v", err)
	}
	version := cfg.APIVersion
	if version == "" {
		version = DefaultAPIVersion
	}
	webhook, err := upstreamwebhook.New(restConfig, version, nil, *upstreamwebhook.DefaultRetryBackoff())
	if err != nil {
		return fail(authv1alpha1.ConditionAuthenticatorValid, authv1alpha1.ReasonUnableToInstantiateWebhook,
			"unable to instantiate webhook: %v", err)
	}
	result.Pass(authv1alpha1.ConditionAuthenticatorValid, "authenticator initialized")
	return &Authenticator{token: webhook}, result
}

// dialTLS opens and closes a TLS connection to the endpoint, verifying its certificate.
func dialTLS(ctx context.Context, endpoint *url.URL, roots *x509.CertPool) error {
	port := endpoint.Port()
	if port == "" {
		port = "443"
	}
	dialer := &tls.Dialer{
		NetDialer: &net.Dialer{Timeout: dialTimeout},
		Config:    &tls.Config{RootCAs: roots, ServerName: endpoint.Hostname(), MinVersion: tls.VersionTLS12},
	}
	conn, err := dialer.DialContext(ctx, "tcp", net.JoinHostPort(endpoint.Hostname(), port))
	if err != nil {
		return err
	}
	return conn.Close()
}

// CheckEndpointURL records EndpointURLValid for endpoint in l and reports whether it passed, with
// the parsed URL and the proxy the environment names for it (nil for none).
func CheckEndpointURL(l *checks.List, endpoint string) (*url.URL, *url.URL, bool) {
	fail := func(reason, format string, args ...any) (*url.URL, *url.URL, bool) {
		l.Fail(authv1alpha1.ConditionEndpointURLValid, reason, format, args...)
		return nil, nil, false
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return fail(authv1alpha1.ReasonInvalidEndpointURL, "spec.endpoint URL cannot be parsed: %v", err)
	}
	if u.Scheme == "https" && u.Host == "" {
		return fail(authv1alpha1.ReasonInvalidEndpointURL, "spec.endpoint URL is not valid: the URL has no host")
	}
	if u.Scheme != "https" {
		return fail(authv1alpha1.ReasonInvalidEndpointURLScheme, "spec.endpoint URL %s has invalid scheme, require 'https'", endpoint)
	}
	proxy, err := http.ProxyFromEnvironment(&http.Request{URL: u})
	if err != nil {
		return fail(authv1alpha1.ReasonInvalidEndpointCannotDetermineProxy, "spec.endpoint URL error: %v", err)
	}
	l.Pass(authv1alpha1.ConditionEndpointURLValid, "spec.endpoint is a valid URL")
	return u, proxy, true
}
