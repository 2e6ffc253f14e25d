package activedirectoryidp

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/connectors/ldapclient"
	"sealion.dev/servers/supervisor/internal/connectors/ldapidp"
)

// The status of an ActiveDirectoryIdentityProvider comes in two steps: Prepare checks what Open
// read (the bind Secret, the resolved spec.tls) without a network call; Connect then finds the
// search bases (SearchBaseFound) and probes the domain controller (LDAPConnectionValid).

// Prepare checks the bind Secret (nil when it does not exist) and the outcome of resolving
// spec.tls (caBundle, or tlsErr), and returns the configuration for Connect, which offers the
// ciphers of settings' TLS profile and connects within its connect timeout. When either check
// fails there is nothing to connect with: the configuration is nil and, as upstream,
// SearchBaseFound and LDAPConnectionValid are left out (those of an earlier run stay).
func Prepare(spec idpv1alpha1.ActiveDirectoryIdentityProviderSpec, generation int64, bindSecret *corev1.Secret, caBundle []byte, tlsErr error, settings connectors.Settings) (*ldapclient.Config, []metav1.Condition) {
	username, password, secretCond := ldapidp.BindSecretCondition(spec.Bind.SecretName, bindSecret)
	tlsCond := connectors.TLSCondition("spec.tls", caBundle, tlsErr)
	conds := []metav1.Condition{secretCond, tlsCond}
	if secretCond.Status != metav1.ConditionTrue || tlsCond.Status != metav1.ConditionTrue {
		return nil, connectors.WithGeneration(conds, generation)
	}
	cfg := ConfigFromSpec(spec, caBundle, username, password)
	cfg.TLSProfile = settings.TLSProfile
	cfg.ConnectTimeout = settings.ConnectTimeout
	return &cfg, connectors.WithGeneration(conds, generation)
}

// Connect resolves the search bases of a configuration from Prepare and probes the domain
// controller with the resulting Provider, which it returns when the probe succeeded; otherwise
// the error says why it failed. SearchBaseFound is worded as upstream words it. bindSecret is the Secret the configuration's credentials came
// from, named in LDAPConnectionValid.
func Connect(ctx context.Context, cfg ldapclient.Config, bindSecret *corev1.Secret, generation int64) (*ldapclient.Provider, []metav1.Condition, error) {
	base := metav1.Condition{Type: idpv1alpha1.ConditionSearchBaseFound, Status: metav1.ConditionTrue, ObservedGeneration: generation}
	conn := metav1.Condition{Type: idpv1alpha1.ConditionLDAPConnectionValid, ObservedGeneration: generation}
	if !NeedsSearchBase(cfg) {
		base.Reason, base.Message = idpv1alpha1.ReasonUsingConfigurationFromSpec, "Using search base from ActiveDirectoryIdentityProvider config."
	} else {
		resolved, err := ResolveSearchBases(ctx, cfg)
		if err != nil {
			base.Status, base.Reason, base.Message = metav1.ConditionFalse, idpv1alpha1.ReasonErrorFetchingSearchBase, "Error finding search base: "+err.Error()
			conn.Status, conn.Reason, conn.Message = metav1.ConditionUnknown, idpv1alpha1.ReasonUnableToValidate, "not probed: the search base is unknown"
			if connectors.Unreachable(err) {
				// The search failed for want of a connection: that is the connection's condition.
				conn.Status, conn.Reason, conn.Message = metav1.ConditionFalse, idpv1alpha1.ReasonLDAPConnectionError, err.Error()
			}
			return nil, []metav1.Condition{base, conn}, err
		}
		base.Reason = idpv1alpha1.ReasonSuccess
		base.Message = "Successfully fetched defaultNamingContext to use as default search base from RootDSE."
		cfg = resolved
	}
	p, err := New(cfg)
	if err != nil {
		conn.Status, conn.Reason, conn.Message = metav1.ConditionFalse, idpv1alpha1.ReasonInvalid, err.Error()
		return nil, []metav1.Condition{base, conn}, err
	}
	_, err = p.Probe(ctx)
	conn = ldapidp.ConnectionCondition(p, bindSecret, generation, err)
	if err != nil {
		return nil, []metav1.Condition{base, conn}, err
	}
	return p, []metav1.Condition{base, conn}, nil
}
