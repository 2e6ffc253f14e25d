package ldapidp

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/connectors/ldapclient"
)

// The status of an LDAPIdentityProvider comes in two steps, so that no network call hides in
// the first: Prepare checks what Open read (the bind Secret, the resolved spec.tls) and builds
// the Provider; Open probes that Provider, and ConnectionCondition turns the result into
// LDAPConnectionValid.

// Prepare checks the bind Secret (nil when it does not exist) and the outcome of resolving
// spec.tls (caBundle, or tlsErr, typically a *cabundle.Error), and builds the Provider to
// probe, which offers the ciphers of profile. When either check fails there is nothing to probe: the Provider is nil and, as
// upstream, LDAPConnectionValid is left out (the one of an earlier probe stays). An otherwise
// unusable spec makes it False.
func Prepare(spec idpv1alpha1.LDAPIdentityProviderSpec, generation int64, bindSecret *corev1.Secret, caBundle []byte, tlsErr error, settings connectors.Settings) (*ldapclient.Provider, []metav1.Condition) {
	username, password, secretCond := BindSecretCondition(spec.Bind.SecretName, bindSecret)
	tlsCond := connectors.TLSCondition("spec.tls", caBundle, tlsErr)
	conds := []metav1.Condition{secretCond, tlsCond}
	if secretCond.Status != metav1.ConditionTrue || tlsCond.Status != metav1.ConditionTrue {
		return nil, connectors.WithGeneration(conds, generation)
	}
	cfg := ConfigFromSpec(spec, caBundle, username, password)
	cfg.TLSProfile = settings.TLSProfile
	cfg.ConnectTimeout = settings.ConnectTimeout
	p, err := ldapclient.New(cfg)
	if err != nil {
		conds = append(conds, metav1.Condition{
			Type: idpv1alpha1.ConditionLDAPConnectionValid, Status: metav1.ConditionFalse,
			Reason: idpv1alpha1.ReasonInvalid, Message: err.Error(),
		})
		return nil, connectors.WithGeneration(conds, generation)
	}
	return p, connectors.WithGeneration(conds, generation)
}

// ConnectionCondition is LDAPConnectionValid after p.Probe returned err. Its success message
// names the bind Secret and the resourceVersion that was validated, as upstream's.
func ConnectionCondition(p *ldapclient.Provider, bindSecret *corev1.Secret, generation int64, err error) metav1.Condition {
	c := metav1.Condition{Type: idpv1alpha1.ConditionLDAPConnectionValid, ObservedGeneration: generation}
	if err != nil {
		c.Status, c.Reason = metav1.ConditionFalse, idpv1alpha1.ReasonLDAPConnectionError
		c.Message = fmt.Sprintf("could not successfully connect to %q and bind as user %q: %v", p.Config().Host, p.Config().BindUsername, err)
		return c
	}
	c.Status, c.Reason = metav1.ConditionTrue, idpv1alpha1.ReasonSuccess
	c.Message = fmt.Sprintf("successfully able to connect to %q and bind as user %q [validated with Secret %q at version %q]",
		p.Config().Host, p.Config().BindUsername, bindSecret.Name, bindSecret.ResourceVersion)
	return c
}

// BindSecretCondition is BindSecretValid, worded as upstream words it: it wants a kubernetes.io/basic-auth Secret (nil
// when it does not exist) with a username (the bind DN) and a password, which it returns.
func BindSecretCondition(name string, s *corev1.Secret) (username, password string, c metav1.Condition) {
	c = metav1.Condition{Type: idpv1alpha1.ConditionBindSecretValid, Status: metav1.ConditionFalse}
	switch {
	case s == nil:
		c.Reason, c.Message = idpv1alpha1.ReasonSecretNotFound, fmt.Sprintf("secret %q not found", name)
	case s.Type != corev1.SecretTypeBasicAuth:
		c.Reason, c.Message = idpv1alpha1.ReasonSecretWrongType,
			fmt.Sprintf("referenced Secret %q has wrong type %q (should be %q)", name, s.Type, corev1.SecretTypeBasicAuth)
	case len(s.Data[corev1.BasicAuthUsernameKey]) == 0 || len(s.Data[corev1.BasicAuthPasswordKey]) == 0:
		c.Reason, c.Message = idpv1alpha1.ReasonSecretMissingKeys,
			fmt.Sprintf("referenced Secret %q is missing required keys %q", name, []string{corev1.BasicAuthUsernameKey, corev1.BasicAuthPasswordKey})
	default:
		c.Status, c.Reason = metav1.ConditionTrue, idpv1alpha1.ReasonSuccess
		c.Message = "loaded bind secret"
		return string(s.Data[corev1.BasicAuthUsernameKey]), string(s.Data[corev1.BasicAuthPasswordKey]), c
	}
	return "", "", c
}
