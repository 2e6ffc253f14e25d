package tokencredentialrequest

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/ptr"

	"sealion.dev/core/apis/concierge/login"
	"sealion.dev/servers/concierge/internal/authncache"
	"sealion.dev/servers/concierge/internal/credential"
	"sealion.dev/servers/internal/audit"
)

type fakeExchanger struct {
	gotKey   authncache.Key
	gotToken string
	err      error
}

func (f *fakeExchanger) Exchange(_ context.Context, key authncache.Key, token string) (*credential.Credential, error) {
	f.gotKey, f.gotToken = key, token
	if f.err != nil {
		return nil, f.err
	}
	return &credential.Credential{ExpirationTimestamp: time.Unix(1000, 0), ClientCertificateData: "CERT", ClientKeyData: "KEY"}, nil
}

var gr = schema.GroupResource{Group: "login.concierge.pinniped.dev", Resource: "tokencredentialrequests"}

func request(token string) *login.TokenCredentialRequest {
	return &login.TokenCredentialRequest{Spec: login.TokenCredentialRequestSpec{
		Token: token,
		Authenticator: corev1.TypedLocalObjectReference{
			APIGroup: ptr.To("authentication.concierge.pinniped.dev"), Kind: "JWTAuthenticator", Name: "dex",
		},
	}}
}

func TestCreateSuccess(t *testing.T) {
	ex := &fakeExchanger{}
	var admitted *login.TokenCredentialRequest
	validate := func(_ context.Context, obj runtime.Object) error {
		admitted = obj.(*login.TokenCredentialRequest)
		return nil
	}
	out, err := NewREST(ex, gr).Create(context.Background(), request("secret-token"), validate, &metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := authncache.Key{APIGroup: "authentication.concierge.pinniped.dev", Kind: "JWTAuthenticator", Name: "dex"}
	if ex.gotKey != want || ex.gotToken != "secret-token" {
		t.Errorf("exchanged %+v %q", ex.gotKey, ex.gotToken)
	}
	if admitted == nil || admitted.Spec.Token != "" {
		t.Errorf("admission saw the token: %+v", admitted)
	}
	resp := out.(*login.TokenCredentialRequest)
	if resp.Status.Message != nil || resp.Status.Credential == nil || resp.Status.Credential.ClientCertificateData != "CERT" ||
		resp.Status.Credential.ClientKeyData != "KEY" || resp.Status.Credential.ExpirationTimestamp.Unix() != 1000 {
		t.Errorf("unexpected status %+v", resp.Status)
	}
	if resp.Spec.Token != "" {
		t.Error("the response echoes the token")
	}
	if !resp.CreationTimestamp.IsZero() {
		t.Error("the response has a creationTimestamp; upstream sends none")
	}
}

func TestCreateFailures(t *testing.T) {
	nsCtx := genericapirequest.WithNamespace(context.Background(), "default")
	tests := []struct {
		name        string
		ctx         context.Context
		opts        *metav1.CreateOptions
		exchangeErr error
		admitErr    error
		wantMessage bool
		wantStatus  int32
		wantError   string // the whole message, when set
	}{
		{name: "authentication failed", exchangeErr: credential.ErrAuthenticationFailed, wantMessage: true},
		{name: "internal error", exchangeErr: errors.New("boom"), wantStatus: 500},
		{name: "namespaced", ctx: nsCtx, wantStatus: 400,
			wantError: "namespace is not allowed on TokenCredentialRequest: default"},
		{name: "dry run", opts: &metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}, wantStatus: 422,
			wantError: `.login.concierge.pinniped.dev "x" is invalid: dryRun: Unsupported value: ["All"]`},
		// dryRun is looked at before the namespace, as upstream does.
		{name: "dry run and namespaced", ctx: nsCtx, opts: &metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}, wantStatus: 422,
			wantError: `.login.concierge.pinniped.dev "x" is invalid: dryRun: Unsupported value: ["All"]`},
		{name: "admission refuses", admitErr: apierrors.NewForbidden(gr, "", errors.New("no")), wantStatus: 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := tt.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			validate := func(context.Context, runtime.Object) error { return tt.admitErr }
			req := request("tok")
			req.Name = "x"
			out, err := NewREST(&fakeExchanger{err: tt.exchangeErr}, gr).Create(ctx, req, validate, tt.opts)
			if tt.wantMessage {
				resp := out.(*login.TokenCredentialRequest)
				if err != nil || resp.Status.Credential != nil || ptr.Deref(resp.Status.Message, "") != "authentication failed" {
					t.Fatalf("got %+v, %v", resp, err)
				}
				return
			}
			var status apierrors.APIStatus
			if !errors.As(err, &status) || status.Status().Code != tt.wantStatus {
				t.Fatalf("got %v, want HTTP %d", err, tt.wantStatus)
			}
			if tt.wantError != "" && err.Error() != tt.wantError {
				t.Errorf("got %q, want %q", err, tt.wantError)
			}
		})
	}
}

// A missing token is a malformed request (422 naming spec.token.value, as upstream, checked before
// anything else); a present but bad token keeps the uniform failure (TestCreateFailures).
func TestCreateWithoutToken(t *testing.T) {
	ex := &fakeExchanger{}
	req := request("")
	req.Name = "x"
	ctx := genericapirequest.WithNamespace(context.Background(), "default")
	_, err := NewREST(ex, gr).Create(ctx, req, nil, &metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Fatalf("got %v, want an API status", err)
	}
	s := status.Status()
	want := `.login.concierge.pinniped.dev "x" is invalid: spec.token.value: Required value: token must be supplied`
	if s.Code != 422 || s.Reason != metav1.StatusReasonInvalid || s.Message != want {
		t.Errorf("got %d %s %q", s.Code, s.Reason, s.Message)
	}
	if s.Details == nil || len(s.Details.Causes) != 1 || s.Details.Causes[0] != (metav1.StatusCause{
		Type: metav1.CauseTypeFieldValueRequired, Field: "spec.token.value", Message: "Required value: token must be supplied",
	}) {
		t.Errorf("details %+v", s.Details)
	}
	if ex.gotToken != "" || ex.gotKey != (authncache.Key{}) {
		t.Error("the exchanger was asked")
	}
}

func TestListIsEmpty(t *testing.T) {
	out, err := NewREST(&fakeExchanger{}, gr).List(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if l := out.(*login.TokenCredentialRequestList); len(l.Items) != 0 || l.ResourceVersion != "0" {
		t.Errorf("got %+v", l)
	}
}

// The generic server advertises the list verb and the categories from these interfaces.
func TestDiscovery(t *testing.T) {
	var s rest.Storage = NewREST(&fakeExchanger{}, gr)
	if _, ok := s.(rest.Lister); !ok {
		t.Error("list is not served")
	}
	cp, ok := s.(rest.CategoriesProvider)
	if !ok || !slices.Equal(cp.Categories(), []string{"pinniped"}) {
		t.Errorf("categories: %v", s)
	}
	if _, ok := s.(rest.ShortNamesProvider); ok {
		t.Error("upstream has no short names")
	}
}

// rejectingAuthenticators refuses every token.
type rejectingAuthenticators struct{}

func (rejectingAuthenticators) AuthenticateToken(context.Context, authncache.Key, string) (*authenticator.Response, bool, error) {
	return nil, false, nil
}

// A request refused before the exchange (missing token, namespace, dryRun, admission) is not
// audited, as upstream; one that reaches it is, under the request's Kubernetes audit ID.
func TestCreateAudit(t *testing.T) {
	var log bytes.Buffer
	ex := &credential.Exchanger{Authenticators: rejectingAuthenticators{}, Audit: audit.New(&log, false)}
	r := NewREST(ex, gr)
	refuse := func(context.Context, runtime.Object) error { return errors.New("admission says no") }
	for name, create := range map[string]func() error{
		"no token": func() error { _, err := r.Create(context.Background(), request(""), nil, nil); return err },
		"namespace": func() error {
			_, err := r.Create(genericapirequest.WithNamespace(context.Background(), "ns"), request("t"), nil, nil)
			return err
		},
		"dryRun": func() error {
			_, err := r.Create(context.Background(), request("t"), nil, &metav1.CreateOptions{DryRun: []string{"All"}})
			return err
		},
		"admission": func() error { _, err := r.Create(context.Background(), request("t"), refuse, nil); return err },
	} {
		if err := create(); err == nil || log.Len() != 0 {
			t.Errorf("%s: err %v, audited %q", name, err, log.String())
		}
	}

	ctx := audit.WithID(context.Background(), "kube-audit-id")
	if _, err := r.Create(ctx, request("secret-token"), nil, nil); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 2 || strings.Contains(log.String(), "secret-token") {
		t.Fatalf("events:\n%s", log.String())
	}
	for _, l := range lines {
		if !strings.Contains(l, `"auditEvent":true,"auditID":"kube-audit-id"`) {
			t.Errorf("not under the request's audit ID: %s", l)
		}
	}
}
