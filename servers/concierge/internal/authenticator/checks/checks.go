// Package checks records the outcome of each step of validating an authenticator's
// configuration, one entry per status condition type, so a controller can publish them as
// conditions and tests can assert on each step.
package checks

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1alpha1 "sealion.dev/core/apis/concierge/authentication/v1alpha1"
)

// Check is the outcome of one validation step.
type Check struct {
	// Type is the condition type, e.g. IssuerURLValid.
	Type string
	// Status is True when the step passed, False when it failed, Unknown when it was not run
	// because an earlier step failed.
	Status metav1.ConditionStatus
	// Reason is a CamelCase reason from the API package (Success when Status is True).
	Reason string
	// Message explains the outcome for humans.
	Message string
}

// List holds checks in the order they ran. Build one with Pass and Fail; once a step fails
// every later step is recorded as Unknown with reason UnableToValidate.
type List []Check

// Pass records a successful step.
func (l *List) Pass(typ, message string) {
	l.add(Check{Type: typ, Status: metav1.ConditionTrue, Reason: authv1alpha1.ReasonSuccess, Message: message})
}

// Fail records a failed step.
func (l *List) Fail(typ, reason, format string, args ...any) {
	l.add(Check{Type: typ, Status: metav1.ConditionFalse, Reason: reason, Message: fmt.Sprintf(format, args...)})
}

// FailAndSkipRest records step typ as failed and every step after it in order as not run.
func (l *List) FailAndSkipRest(order []string, typ, reason, format string, args ...any) {
	l.Fail(typ, reason, format, args...)
	l.SkipAfter(order, typ)
}

// SkipAfter records every step after typ in order as not run.
func (l *List) SkipAfter(order []string, typ string) {
	for i, t := range order {
		if t == typ {
			l.Skip(order[i+1:]...)
			return
		}
	}
}

// Skip records steps as not run.
func (l *List) Skip(types ...string) {
	for _, typ := range types {
		l.add(Check{Type: typ, Status: metav1.ConditionUnknown, Reason: authv1alpha1.ReasonUnableToValidate,
			Message: "unable to validate; see other conditions for details"})
	}
}

func (l *List) add(c Check) { *l = append(*l, c) }

// OK reports whether every step passed.
func (l List) OK() bool {
	for _, c := range l {
		if c.Status != metav1.ConditionTrue {
			return false
		}
	}
	return true
}

// Get returns the check of the given type.
func (l List) Get(typ string) (Check, bool) {
	for _, c := range l {
		if c.Type == typ {
			return c, true
		}
	}
	return Check{}, false
}

// Err is nil when every step passed, else an error naming the failed steps.
func (l List) Err() error {
	var failed []string
	for _, c := range l {
		if c.Status == metav1.ConditionFalse {
			failed = append(failed, fmt.Sprintf("%s (%s): %s", c.Type, c.Reason, c.Message))
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return fmt.Errorf("authenticator configuration invalid: %s", strings.Join(failed, "; "))
}

// Conditions turns the checks into status conditions stamped with the object's generation,
// in the order they ran; lastTransitionTime is left for meta.SetStatusCondition to fill.
func (l List) Conditions(observedGeneration int64) []metav1.Condition {
	out := make([]metav1.Condition, 0, len(l))
	for _, c := range l {
		out = append(out, metav1.Condition{
			Type:               c.Type,
			Status:             c.Status,
			ObservedGeneration: observedGeneration,
			Reason:             c.Reason,
			Message:            c.Message,
		})
	}
	return out
}
