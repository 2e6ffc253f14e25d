package connectors

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
)

func TestPhaseOf(t *testing.T) {
	trueCond := metav1.Condition{Status: metav1.ConditionTrue}
	unknown := metav1.Condition{Status: metav1.ConditionUnknown}
	failed := metav1.Condition{Status: metav1.ConditionFalse}
	for _, tt := range []struct {
		conds []metav1.Condition
		want  idpv1alpha1.Phase
	}{
		{nil, idpv1alpha1.PhasePending},
		{[]metav1.Condition{trueCond, trueCond}, idpv1alpha1.PhaseReady},
		{[]metav1.Condition{trueCond, unknown}, idpv1alpha1.PhaseError}, // as upstream: Unknown counts
		{[]metav1.Condition{unknown, failed, trueCond}, idpv1alpha1.PhaseError},
	} {
		if got := PhaseOf(tt.conds); got != tt.want {
			t.Errorf("PhaseOf(%v) = %s, want %s", tt.conds, got, tt.want)
		}
	}
}
