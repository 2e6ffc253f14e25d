package activedirectoryidp

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/connectors/ldapclient"
	"sealion.dev/servers/supervisor/internal/connectors/ldapidp"
	"sealion.dev/servers/supervisor/internal/issuer"
)

// Flows of an ActiveDirectoryIdentityProvider: the CLI's password flow first, and the login form.
func Flows(*idpv1alpha1.ActiveDirectoryIdentityProvider) []issuer.Flow {
	return connectors.PasswordFlows
}

// Open checks an ActiveDirectoryIdentityProvider with its bind Secret and CA bundle, then finds
// its search bases and connects to the domain controller (Connect), unless it did so successfully
// for the same inputs less than connectors.ProbeTTL ago. A domain controller that cannot be
// reached keeps the connector of the last successful probe of the same inputs (see
// connectors.Factory).
func Open(ctx context.Context, idp *idpv1alpha1.ActiveDirectoryIdentityProvider, in connectors.Inputs) (connectors.Connector, []metav1.Condition, error) {
	return open(ctx, idp, in, Connect)
}

// connected is what Connect returned: the Provider, nil when it failed, and the SearchBaseFound
// and LDAPConnectionValid conditions. After a failure that only the server's absence caused,
// provider is the last one that connected.
type connected struct {
	provider *ldapclient.Provider
	conds    []metav1.Condition
}

// open is Open with Connect as a parameter, for tests.
func open(ctx context.Context, idp *idpv1alpha1.ActiveDirectoryIdentityProvider, in connectors.Inputs,
	connect func(context.Context, ldapclient.Config, *corev1.Secret, int64) (*ldapclient.Provider, []metav1.Condition, error),
) (connectors.Connector, []metav1.Condition, error) {
	secret, err := in.Secret(idp.Spec.Bind.SecretName)
	if err != nil {
		return nil, nil, err
	}
	caBundle, tlsErr := in.CABundle("spec.tls", idp.Spec.TLS)
	cfg, conds := Prepare(idp.Spec, idp.Generation, secret, caBundle, tlsErr, in.Settings)
	if cfg == nil {
		return nil, conds, nil
	}
	r := connectors.Probe(in.Probes, connectors.Fingerprint(idp.Generation, secret, caBundle), func(prev connected, found bool) (connected, bool) {
		p, conds, err := connect(ctx, *cfg, secret, idp.Generation)
		if err != nil && found && connectors.Unreachable(err) {
			p = prev.provider
			// A success in an earlier process left no provider here; one can be made again
			// only when the spec names the search bases, which the server is not there to tell.
			if p == nil && !NeedsSearchBase(*cfg) {
				p, _ = New(*cfg) // an invalid configuration never succeeded: nil, no connector
			}
		}
		return connected{p, conds}, err == nil
	})
	conds = append(conds, r.conds...)
	if r.provider == nil {
		return nil, conds, nil
	}
	return ldapidp.NewConnector(r.provider, issuer.TypeActiveDirectory), conds, nil
}
