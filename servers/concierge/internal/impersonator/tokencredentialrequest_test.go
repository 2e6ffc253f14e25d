package impersonator

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sealion.dev/servers/concierge/internal/authncache"
	"sealion.dev/servers/concierge/internal/credential"
)

type refusingExchanger struct{ called bool }

func (e *refusingExchanger) Exchange(context.Context, authncache.Key, string) (*credential.Credential, error) {
	e.called = true
	return nil, credential.ErrAuthenticationFailed
}

// A request without a token is answered as by the aggregated API (and upstream): 422 naming
// spec.token.value, before dryRun is looked at, and the exchanger is never asked.
func TestTokenCredentialRequestWithoutToken(t *testing.T) {
	const group = "login.concierge.pinniped.dev"
	ex := &refusingExchanger{}
	body := `{"apiVersion":"login.concierge.pinniped.dev/v1alpha1","kind":"TokenCredentialRequest","metadata":{"name":"x"},"spec":{"authenticator":{"kind":"JWTAuthenticator","name":"a"}}}`
	rec := httptest.NewRecorder()
	TokenCredentialRequestHandler(group, ex).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, TokenCredentialRequestPath(group)+"?dryRun=All", strings.NewReader(body)))

	var status metav1.Status
	if err := json.Unmarshal(rec.Body.Bytes(), &status); err != nil {
		t.Fatalf("%v: %s", err, rec.Body)
	}
	want := `.login.concierge.pinniped.dev "x" is invalid: spec.token.value: Required value: token must be supplied`
	if rec.Code != http.StatusUnprocessableEntity || status.Kind != "Status" || status.Reason != metav1.StatusReasonInvalid || status.Message != want {
		t.Errorf("got %d %+v", rec.Code, status)
	}
	if status.Details == nil || len(status.Details.Causes) != 1 || status.Details.Causes[0] != (metav1.StatusCause{
		Type: metav1.CauseTypeFieldValueRequired, Field: "spec.token.value", Message: "Required value: token must be supplied",
	}) {
		t.Errorf("details %+v", status.Details)
	}
	if ex.called {
		t.Error("the exchanger was asked")
	}
}

// dryRun through the proxy is the aggregated API's (and upstream's) 422 on the field dryRun.
func TestTokenCredentialRequestDryRun(t *testing.T) {
	const group = "login.concierge.pinniped.dev"
	ex := &refusingExchanger{}
	body := `{"apiVersion":"login.concierge.pinniped.dev/v1alpha1","kind":"TokenCredentialRequest","metadata":{"name":"x"},"spec":{"token":"t","authenticator":{"kind":"JWTAuthenticator","name":"a"}}}`
	rec := httptest.NewRecorder()
	TokenCredentialRequestHandler(group, ex).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, TokenCredentialRequestPath(group)+"?dryRun=All", strings.NewReader(body)))

	var status metav1.Status
	if err := json.Unmarshal(rec.Body.Bytes(), &status); err != nil {
		t.Fatalf("%v: %s", err, rec.Body)
	}
	want := `.login.concierge.pinniped.dev "x" is invalid: dryRun: Unsupported value: ["All"]`
	if rec.Code != http.StatusUnprocessableEntity || status.Reason != metav1.StatusReasonInvalid || status.Message != want {
		t.Errorf("got %d %+v", rec.Code, status)
	}
	if ex.called {
		t.Error("the exchanger was asked")
	}
}
