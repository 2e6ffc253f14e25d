package upstreamldap

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	"sealion.dev/core/cabundle"
)

// The status of an LDAPIdentityProvider comes in two steps, so that no network call hides in
// them: Prepare checks what the controller read (the bind Secret, the resolved spec.tls) and
// builds the Provider; the controller probes that Provider, and ConnectionCondition turns the
// result into LDAPConnectionValid. PhaseOf summarizes the conditions.

// Prepare checks the bind Secret (nil when it does not exist) and the outcome of resolving
// spec.tls (caBundle, or tlsErr, typically a *cabundle.Error), and builds the Provider to
// probe. When either check fails there is nothing to probe: the Provider is nil and
// LDAPConnectionValid, included then, is Unknown. An otherwise unusable spec makes it False.
func Prepare(spec idpv1alpha1.LDAPIdentityProviderSpec, generation int64, bindSecret *corev1.Secret, caBundle []byte, tlsErr error) (*Provider, []metav1.Condition) {
	username, password, secretCond := BindSecretCondition(spec.Bind.SecretName, bindSecret)
	tlsCond := TLSCondition(caBundle, tlsErr)
	conds := []metav1.Condition{secretCond, tlsCond}
	if secretCond.Status != metav1.ConditionTrue || tlsCond.Status != metav1.ConditionTrue {
		conds = append(conds, metav1.Condition{
			Type: idpv1alpha1.ConditionLDAPConnectionValid, Status: metav1.ConditionUnknown,
			Reason: idpv1alpha1.ReasonUnableToValidate, Message: "not probed: the bind Secret or spec.tls is invalid",
		})
		return nil, withGeneration(conds, generation)
	}
	p, err := New(ConfigFromSpec(spec, caBundle, username, password))
	if err != nil {
		conds = append(conds, metav1.Condition{
			Type: idpv1alpha1.ConditionLDAPConnectionValid, Status: metav1.ConditionFalse,
			Reason: idpv1alpha1.ReasonInvalid, Message: err.Error(),
		})
		return nil, withGeneration(conds, generation)
	}
	return p, withGeneration(conds, generation)
}

// ConnectionCondition is LDAPConnectionValid after p.Probe returned protocol and err.
func ConnectionCondition(p *Provider, generation int64, protocol Protocol, err error) metav1.Condition {
	c := metav1.Condition{Type: idpv1alpha1.ConditionLDAPConnectionValid, ObservedGeneration: generation}
	if err != nil {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, idpv1alpha1.ReasonLDAPConnectionError, err.Error()
		return c
	}
	c.Status, c.Reason = metav1.ConditionTrue, idpv1alpha1.ReasonSuccess
	c.Message = fmt.Sprintf("connected to %q with %s and bound as %q", p.cfg.Host, protocol, p.cfg.BindUsername)
	return c
}

// PhaseOf is Error when a condition is False, Ready when all are True, else Pending.
func PhaseOf(conds []metav1.Condition) idpv1alpha1.Phase {
	phase := idpv1alpha1.PhaseReady
	for _, c := range conds {
		switch c.Status {
		case metav1.ConditionFalse:
			return idpv1alpha1.PhaseError
		case metav1.ConditionTrue:
		default:
			phase = idpv1alpha1.PhasePending
		}
	}
	if len(conds) == 0 {
		return idpv1alpha1.PhasePending
	}
	return phase
}

// BindSecretCondition is BindSecretValid: it wants a kubernetes.io/basic-auth Secret (nil
// when it does not exist) with a username (the bind DN) and a password, which it returns.
func BindSecretCondition(name string, s *corev1.Secret) (username, password string, c metav1.Condition) {
	c = metav1.Condition{Type: idpv1alpha1.ConditionBindSecretValid, Status: metav1.ConditionFalse}
	switch {
	case s == nil:
		c.Reason, c.Message = idpv1alpha1.ReasonSecretNotFound, fmt.Sprintf("Secret %q not found", name)
	case s.Type != corev1.SecretTypeBasicAuth:
		c.Reason, c.Message = idpv1alpha1.ReasonSecretWrongType,
			fmt.Sprintf("Secret %q has type %q, want %q", name, s.Type, corev1.SecretTypeBasicAuth)
	case len(s.Data[corev1.BasicAuthUsernameKey]) == 0 || len(s.Data[corev1.BasicAuthPasswordKey]) == 0:
		c.Reason, c.Message = idpv1alpha1.ReasonSecretMissingKeys,
			fmt.Sprintf("Secret %q needs non-empty keys %q and %q", name, corev1.BasicAuthUsernameKey, corev1.BasicAuthPasswordKey)
	default:
		c.Status, c.Reason = metav1.ConditionTrue, idpv1alpha1.ReasonSuccess
		c.Message = fmt.Sprintf("loaded the bind DN and password from Secret %q", name)
		return string(s.Data[corev1.BasicAuthUsernameKey]), string(s.Data[corev1.BasicAuthPasswordKey]), c
	}
	return "", "", c
}

// TLSCondition is TLSConfigurationValid after resolving spec.tls to caBundle or err.
func TLSCondition(caBundle []byte, err error) metav1.Condition {
	c := metav1.Condition{Type: idpv1alpha1.ConditionTLSConfigurationValid, Status: metav1.ConditionTrue, Reason: idpv1alpha1.ReasonSuccess}
	var cbErr *cabundle.Error
	switch {
	case errors.As(err, &cbErr):
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, cbErr.Reason, cbErr.Message
	case err != nil:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, idpv1alpha1.ReasonInvalidTLSConfig, err.Error()
	case len(caBundle) == 0:
		c.Message = "no CA bundle configured: the system roots verify the server"
	default:
		c.Message = "the configured CA bundle verifies the server"
	}
	return c
}

func withGeneration(conds []metav1.Condition, generation int64) []metav1.Condition {
	for i := range conds {
		conds[i].ObservedGeneration = generation
	}
	return conds
}
