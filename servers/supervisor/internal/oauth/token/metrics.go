package token

import (
	"errors"
	"sync"
	"time"

	"github.com/ory/fosite"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"sealion.dev/servers/supervisor/internal/oauth/provider"
)

var (
	tokenRequests = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace: "pinniped",
		Subsystem: "supervisor",
		Name:      "token_requests_total",
		Help: "Token endpoint requests, by FederationDomain, grant (authorization_code: a login completed; refresh_token; " +
			"token_exchange: a cluster's ID token; device_code; other), the identity provider type of the session (unknown " +
			"before one is found) and result: success, polled (a device poll answered pending, slow_down, denied or expired), " +
			"or the OAuth error code answered (invalid_grant, invalid_client, ...).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"federation_domain", "grant_type", "identity_provider_type", "result"})
	tokenDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace:      "pinniped",
		Subsystem:      "supervisor",
		Name:           "token_request_duration_seconds",
		Help:           "Time to answer a token endpoint request, by grant; a refresh includes the upstream identity provider's check of the user.",
		Buckets:        []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
		StabilityLevel: metrics.ALPHA,
	}, []string{"grant_type"})
	registerOnce sync.Once
)

// RegisterMetrics adds the token endpoint's metrics to the registry the Supervisor serves at /metrics.
func RegisterMetrics() {
	registerOnce.Do(func() { legacyregistry.MustRegister(tokenRequests, tokenDuration) })
}

// grantLabel names a grant_type parameter by a fixed set, so that what a client sends cannot grow
// the series.
func grantLabel(grantType string) string {
	switch grantType {
	case provider.GrantAuthorizationCode:
		return "authorization_code"
	case provider.GrantRefreshToken:
		return "refresh_token"
	case provider.GrantTokenExchange:
		return "token_exchange"
	case provider.GrantDeviceCode:
		return "device_code"
	}
	return "other"
}

// resultLabel is "success", or the OAuth error code err is answered with.
func resultLabel(err error) string {
	if err == nil {
		return "success"
	}
	var rfc *fosite.RFC6749Error
	if errors.As(err, &rfc) && rfc.ErrorField != "" {
		return knownErrorCode(rfc.ErrorField)
	}
	return fosite.ErrorToRFC6749Error(err).ErrorField
}

// knownErrorCode bounds the error codes: those of RFC 6749, 8628 and 8693, and fosite's.
func knownErrorCode(code string) string {
	switch code {
	case "invalid_request", "invalid_client", "invalid_grant", "unauthorized_client", "unsupported_grant_type",
		"invalid_scope", "invalid_target", "access_denied", "server_error", "temporarily_unavailable",
		"authorization_pending", "slow_down", "expired_token", "request_unauthorized", "request_forbidden",
		"invalid_token", "token_inactive", "unsupported_token_type":
		return code
	}
	return "other_error"
}

// observation is one token request's labels, filled in as the request goes.
type observation struct {
	federationDomain, grant, idpType, result string
	start                                    time.Time
}

func (o *observation) record() {
	tokenRequests.WithLabelValues(o.federationDomain, o.grant, o.idpType, o.result).Inc()
	tokenDuration.WithLabelValues(o.grant).Observe(time.Since(o.start).Seconds())
}
