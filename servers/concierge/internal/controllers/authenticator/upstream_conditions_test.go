package authenticator

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1alpha1 "sealion.dev/core/apis/concierge/authentication/v1alpha1"
	"sealion.dev/core/testing/oidcissuer"
)

// condLine is a condition as upstream Pinniped's tests compare it.
type condLine struct{ typ, status, reason, message string }

func lines(conds []metav1.Condition) []condLine {
	out := make([]condLine, 0, len(conds))
	for _, c := range conds {
		out = append(out, condLine{c.Type, string(c.Status), c.Reason, c.Message})
	}
	return out
}

func checkLines(t *testing.T, got []metav1.Condition, want []condLine) {
	t.Helper()
	g := lines(got)
	if len(g) != len(want) {
		t.Fatalf("got %d conditions %+v\nwant %+v", len(g), g, want)
	}
	for i := range want {
		if g[i] != want[i] {
			t.Errorf("condition %d:\n got %+v\nwant %+v", i, g[i], want[i])
		}
	}
}

// The conditions of a working JWTAuthenticator are upstream's types, reasons and messages, sorted by
// type, and so are those of a broken one.
func TestJWTAuthenticatorConditionsAsUpstream(t *testing.T) {
	iss := oidcissuer.New(t)
	e := newEnv(t, envOptions{})
	e.createJWT(jwtAuthenticator("ok", iss.Issuer, "cluster-a", inlineCA(iss.CABundle)))
	obj := e.waitForJWT("ok", "to be Ready", jwtPhase(authv1alpha1.PhaseReady))
	checkLines(t, obj.Status.Conditions, []condLine{
		{"AuthenticatorValid", "True", "Success", "authenticator initialized"},
		{"DiscoveryURLValid", "True", "Success", "discovery performed successfully"},
		{"IssuerURLValid", "True", "Success", "issuer is a valid URL"},
		{"JWKSFetchValid", "True", "Success", "successfully fetched jwks"},
		{"JWKSURLValid", "True", "Success", "jwks_uri is a valid URL"},
		{"Ready", "True", "Success", "the JWTAuthenticator is ready"},
		{"TLSConfigurationValid", "True", "Success", "spec.tls is valid: using configured CA bundle"},
	})

	const skipped = "unable to validate; see other conditions for details"
	bad := strings.Replace(iss.Issuer, "https://", "http://", 1)
	e.createJWT(jwtAuthenticator("http", bad, "cluster-a", nil))
	obj = e.waitForJWT("http", "to fail", jwtPhase(authv1alpha1.PhaseError))
	checkLines(t, obj.Status.Conditions, []condLine{
		{"AuthenticatorValid", "Unknown", "UnableToValidate", skipped},
		{"DiscoveryURLValid", "Unknown", "UnableToValidate", skipped},
		{"IssuerURLValid", "False", "InvalidIssuerURLScheme", "spec.issuer " + bad + " has invalid scheme, require 'https'"},
		{"JWKSFetchValid", "Unknown", "UnableToValidate", skipped},
		{"JWKSURLValid", "Unknown", "UnableToValidate", skipped},
		{"Ready", "False", "NotReady", "the JWTAuthenticator is not ready: see other conditions for details"},
		{"TLSConfigurationValid", "True", "Success", "spec.tls is valid: no TLS configuration provided: using default root CA bundle from container image"},
	})

	e.createJWT(jwtAuthenticator("nosecret", iss.Issuer, "cluster-a",
		caFrom(authv1alpha1.CertificateAuthorityDataSourceKindSecret, "gone", "ca.crt")))
	obj = e.waitForJWT("nosecret", "to fail", jwtPhase(authv1alpha1.PhaseError))
	// The issuer URL is judged on its own, as upstream does.
	checkLines(t, obj.Status.Conditions, []condLine{
		{"AuthenticatorValid", "Unknown", "UnableToValidate", skipped},
		{"DiscoveryURLValid", "Unknown", "UnableToValidate", skipped},
		{"IssuerURLValid", "True", "Success", "issuer is a valid URL"},
		{"JWKSFetchValid", "Unknown", "UnableToValidate", skipped},
		{"JWKSURLValid", "Unknown", "UnableToValidate", skipped},
		{"Ready", "False", "NotReady", "the JWTAuthenticator is not ready: see other conditions for details"},
		{"TLSConfigurationValid", "False", "InvalidTLSConfig",
			`spec.tls.certificateAuthorityDataSource is invalid: failed to get secret "` + namespace + `/gone": secret "gone" not found`},
	})
}

func TestWebhookAuthenticatorConditionsAsUpstream(t *testing.T) {
	server := newTokenReviewServer(t)
	e := newEnv(t, envOptions{})
	e.createWebhook(webhookAuthenticator("ok", server.URL+"/authenticate", inlineCA(server.caBundle)))
	obj := e.waitForWebhook("ok", "to be Ready", webhookPhase(authv1alpha1.PhaseReady))
	checkLines(t, obj.Status.Conditions, []condLine{
		{"AuthenticatorValid", "True", "Success", "authenticator initialized"},
		{"EndpointURLValid", "True", "Success", "spec.endpoint is a valid URL"},
		{"Ready", "True", "Success", "the WebhookAuthenticator is ready"},
		{"TLSConfigurationValid", "True", "Success", "spec.tls is valid: using configured CA bundle"},
		{"WebhookConnectionValid", "True", "Success", "successfully dialed webhook server"},
	})

	const skipped = "unable to validate; see other conditions for details"
	bad := strings.Replace(server.URL, "https://", "http://", 1)
	e.createWebhook(webhookAuthenticator("http", bad, inlineCA(server.caBundle)))
	obj = e.waitForWebhook("http", "to fail", webhookPhase(authv1alpha1.PhaseError))
	checkLines(t, obj.Status.Conditions, []condLine{
		{"AuthenticatorValid", "Unknown", "UnableToValidate", skipped},
		{"EndpointURLValid", "False", "InvalidEndpointURLScheme", "spec.endpoint URL " + bad + " has invalid scheme, require 'https'"},
		{"Ready", "False", "NotReady", "the WebhookAuthenticator is not ready: see other conditions for details"},
		{"TLSConfigurationValid", "True", "Success", "spec.tls is valid: using configured CA bundle"},
		{"WebhookConnectionValid", "Unknown", "UnableToValidate", skipped},
	})
}
