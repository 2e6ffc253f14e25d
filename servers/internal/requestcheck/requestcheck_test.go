package requestcheck

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestDryRun(t *testing.T) {
	if err := DryRun(schema.GroupKind{Group: "login.concierge.pinniped.dev"}, "x", nil); err != nil {
		t.Fatalf("no dryRun refused: %v", err)
	}
	err := DryRun(schema.GroupKind{Group: "login.concierge.pinniped.dev"}, "x", []string{metav1.DryRunAll})
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Fatalf("got %v, want an API status", err)
	}
	s := status.Status()
	want := `.login.concierge.pinniped.dev "x" is invalid: dryRun: Unsupported value: ["All"]`
	if s.Code != 422 || s.Reason != metav1.StatusReasonInvalid || s.Message != want {
		t.Errorf("got %d %s %q, want 422 Invalid %q", s.Code, s.Reason, s.Message, want)
	}
	if s.Details == nil || len(s.Details.Causes) != 1 || s.Details.Causes[0] != (metav1.StatusCause{
		Type: metav1.CauseTypeFieldValueNotSupported, Field: "dryRun", Message: `Unsupported value: ["All"]`,
	}) {
		t.Errorf("details %+v", s.Details)
	}
}

func TestNamespace(t *testing.T) {
	if err := Namespace("WhoAmIRequest", ""); err != nil {
		t.Fatalf("no namespace refused: %v", err)
	}
	err := Namespace("TokenCredentialRequest", "default")
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Fatalf("got %v, want an API status", err)
	}
	s := status.Status()
	if want := "namespace is not allowed on TokenCredentialRequest: default"; s.Code != 400 || s.Message != want {
		t.Errorf("got %d %q, want 400 %q", s.Code, s.Message, want)
	}
}
