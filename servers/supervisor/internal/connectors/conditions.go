package connectors

import (
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	"sealion.dev/core/cabundle"
	"sealion.dev/servers/supervisor/internal/issuer"
)

// Login flows of the kinds, the preferred one first: the CLI picks it when it is not told.
var (
	// BrowserFlows are those of an upstream that logs users in on its own pages.
	BrowserFlows = []issuer.Flow{issuer.FlowBrowserAuthcode}
	// PasswordFlows are those of an upstream that checks passwords the Supervisor collects: from
	// the CLI, or on the Supervisor's login form.
	PasswordFlows = []issuer.Flow{issuer.FlowCLIPassword, issuer.FlowBrowserAuthcode}
)

// PhaseOf is Ready when every condition is True, and Error otherwise (Unknown counts), as
// upstream Pinniped's; Pending without conditions.
func PhaseOf(conds []metav1.Condition) idpv1alpha1.Phase {
	if len(conds) == 0 {
		return idpv1alpha1.PhasePending
	}
	for _, c := range conds {
		if c.Status != metav1.ConditionTrue {
			return idpv1alpha1.PhaseError
		}
	}
	return idpv1alpha1.PhaseReady
}

// TLSCondition is TLSConfigurationValid after resolving the TLS spec at field to caBundle or err.
func TLSCondition(field string, caBundle []byte, err error) metav1.Condition {
	c := metav1.Condition{Type: idpv1alpha1.ConditionTLSConfigurationValid, Status: metav1.ConditionTrue, Reason: idpv1alpha1.ReasonSuccess}
	var cbErr *cabundle.Error
	switch {
	case errors.As(err, &cbErr):
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, cbErr.Reason, cbErr.Message
	case err != nil:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, idpv1alpha1.ReasonInvalidTLSConfig, err.Error()
	default:
		c.Message = cabundle.ValidMessage(field, caBundle)
	}
	return c
}

// WithGeneration sets the observed generation of every condition.
func WithGeneration(conds []metav1.Condition, generation int64) []metav1.Condition {
	for i := range conds {
		conds[i].ObservedGeneration = generation
	}
	return conds
}
