package oidcclientsecretrequest

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"golang.org/x/crypto/bcrypt"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	kubefake "k8s.io/client-go/kubernetes/fake"
	kubetesting "k8s.io/client-go/testing"

	"sealion.dev/core/apis/supervisor/clientsecret"
	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
	supervisorfake "sealion.dev/core/generated/supervisor/clientset/versioned/fake"
	"sealion.dev/servers/internal/audit"
	"sealion.dev/servers/supervisor/internal/clientsecrets"
)

const (
	ns         = "pinniped-supervisor"
	clientName = "client.oauth.pinniped.dev-app"
	clientUID  = "0b6d4a51-uid"
	apiVersion = "config.supervisor.tuna.io/v1alpha1"
)

var gr = schema.GroupResource{Group: "clientsecret.supervisor.tuna.io", Resource: "oidcclientsecretrequests"}

type fixture struct {
	kube *kubefake.Clientset
	rest *REST
	log  bytes.Buffer // the audit events
}

func newFixture(t *testing.T, cost int) *fixture {
	t.Helper()
	kube := kubefake.NewClientset()
	supervisor := supervisorfake.NewSimpleClientset(&configv1alpha1.OIDCClient{
		ObjectMeta: metav1.ObjectMeta{Name: clientName, Namespace: ns, UID: clientUID},
	})
	f := &fixture{kube: kube}
	f.rest = NewREST(Config{
		Namespace:            ns,
		OIDCClients:          supervisor.ConfigV1alpha1().OIDCClients(ns),
		Store:                &clientsecrets.Store{Secrets: kube.CoreV1().Secrets(ns), Labels: map[string]string{"app": "pinniped-supervisor"}},
		OIDCClientAPIVersion: apiVersion,
		Cost:                 cost, // and crypto/rand, as Rand is nil
		Audit:                audit.New(&f.log, false),
	}, gr)
	return f
}

func nsContext(namespace string) context.Context {
	return genericapirequest.WithNamespace(context.Background(), namespace)
}

func request(name string, generate, revoke bool) *clientsecret.OIDCClientSecretRequest {
	return &clientsecret.OIDCClientSecretRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       clientsecret.OIDCClientSecretRequestSpec{GenerateNewSecret: generate, RevokeOldSecrets: revoke},
	}
}

func (f *fixture) create(t *testing.T, generate, revoke bool) *clientsecret.OIDCClientSecretRequest {
	t.Helper()
	out, err := f.rest.Create(nsContext(ns), request(clientName, generate, revoke), nil, &metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("Create(generate=%v, revoke=%v): %v", generate, revoke, err)
	}
	return out.(*clientsecret.OIDCClientSecretRequest)
}

// stored returns the hashes in the client's storage Secret.
func (f *fixture) stored(t *testing.T) []string {
	t.Helper()
	secret, err := f.kube.CoreV1().Secrets(ns).Get(context.Background(), clientsecrets.SecretName(clientUID), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hashes, err := clientsecrets.Hashes(secret)
	if err != nil {
		t.Fatal(err)
	}
	return hashes
}

var hex64 = regexp.MustCompile(`^[0-9a-f]{64}$`)

func matches(hash, secret string) bool {
	return bcrypt.CompareHashAndPassword([]byte(hash), []byte(secret)) == nil
}

func TestGenerateAndRevoke(t *testing.T) {
	f := newFixture(t, bcrypt.MinCost)

	first := f.create(t, true, false)
	if !hex64.MatchString(first.Status.GeneratedSecret) || first.Status.TotalClientSecrets != 1 {
		t.Fatalf("first secret: %+v", first.Status)
	}
	if first.Name != clientName || first.Namespace != ns || first.CreationTimestamp.IsZero() || !first.Spec.GenerateNewSecret {
		t.Errorf("response metadata or spec: %+v", first)
	}
	secret, err := f.kube.CoreV1().Secrets(ns).Get(context.Background(), clientsecrets.SecretName(clientUID), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if refs := secret.OwnerReferences; len(refs) != 1 || refs[0].APIVersion != apiVersion || refs[0].Kind != "OIDCClient" ||
		refs[0].Name != clientName || refs[0].UID != clientUID {
		t.Errorf("owner references %+v", refs)
	}
	if secret.Labels["app"] != "pinniped-supervisor" {
		t.Errorf("labels %v", secret.Labels)
	}

	second := f.create(t, true, false)
	if second.Status.TotalClientSecrets != 2 || second.Status.GeneratedSecret == first.Status.GeneratedSecret {
		t.Fatalf("second secret: %+v", second.Status)
	}
	hashes := f.stored(t)
	if len(hashes) != 2 || !matches(hashes[0], second.Status.GeneratedSecret) || !matches(hashes[1], first.Status.GeneratedSecret) {
		t.Fatalf("stored hashes are not newest first")
	}

	// Neither flag: a count, and no write.
	before := len(f.kube.Actions())
	if got := f.create(t, false, false); got.Status.TotalClientSecrets != 2 || got.Status.GeneratedSecret != "" {
		t.Errorf("count only: %+v", got.Status)
	}
	for _, a := range f.kube.Actions()[before:] {
		if a.GetVerb() != "get" {
			t.Errorf("a request without flags wrote: %v", a)
		}
	}

	// Revoking alone keeps the newest secret.
	if got := f.create(t, false, true); got.Status.TotalClientSecrets != 1 || got.Status.GeneratedSecret != "" {
		t.Errorf("revoke: %+v", got.Status)
	}
	if hashes := f.stored(t); len(hashes) != 1 || !matches(hashes[0], second.Status.GeneratedSecret) {
		t.Error("revoking did not keep the newest secret")
	}

	// Generating and revoking keeps only the new secret.
	third := f.create(t, true, true)
	if third.Status.TotalClientSecrets != 1 {
		t.Errorf("generate and revoke: %+v", third.Status)
	}
	if hashes := f.stored(t); len(hashes) != 1 || !matches(hashes[0], third.Status.GeneratedSecret) {
		t.Error("generate and revoke did not keep only the new secret")
	}
}

func TestAtMostFiveSecrets(t *testing.T) {
	f := newFixture(t, bcrypt.MinCost)
	for range clientsecrets.MaxSecrets {
		f.create(t, true, false)
	}
	_, err := f.rest.Create(nsContext(ns), request(clientName, true, false), nil, nil)
	if want := "OIDCClient " + clientName + " has too many secrets, spec.revokeOldSecrets must be true"; !apierrors.IsBadRequest(err) || err.Error() != want {
		t.Fatalf("a sixth secret: %v, want BadRequest %q", err, want)
	}
	if len(f.stored(t)) != clientsecrets.MaxSecrets {
		t.Error("the refused request changed the stored secrets")
	}
	if got := f.create(t, true, true); got.Status.TotalClientSecrets != 1 {
		t.Errorf("a sixth secret with revokeOldSecrets: %+v", got.Status)
	}
}

func TestHashCost(t *testing.T) {
	f := newFixture(t, 0) // the default
	out := f.create(t, true, false)
	hashes := f.stored(t)
	if cost, err := bcrypt.Cost([]byte(hashes[0])); err != nil || cost != 12 || !matches(hashes[0], out.Status.GeneratedSecret) {
		t.Errorf("hash cost %d, %v", cost, err)
	}
}

func TestRejectedRequests(t *testing.T) {
	withName := func(name string) *clientsecret.OIDCClientSecretRequest { return request(name, true, false) }
	tests := []struct {
		name       string
		ctx        context.Context
		obj        runtime.Object
		opts       *metav1.CreateOptions
		validation func(context.Context, runtime.Object) error
		wantCode   int32
		wantField  string
		// wantErr is the whole message, upstream's, when set.
		wantErr string
	}{
		{name: "unknown OIDCClient", obj: withName("client.oauth.pinniped.dev-other"), wantCode: http.StatusUnprocessableEntity, wantField: "metadata.name",
			wantErr: `OIDCClientSecretRequest.clientsecret.supervisor.tuna.io "client.oauth.pinniped.dev-other" is invalid: metadata.name: Not found: "client.oauth.pinniped.dev-other"`},
		{name: "name without the prefix", obj: withName("my-client"), wantCode: http.StatusUnprocessableEntity, wantField: "metadata.name",
			wantErr: `OIDCClientSecretRequest.clientsecret.supervisor.tuna.io "my-client" is invalid: metadata.name: Invalid value: "my-client": must start with 'client.oauth.pinniped.dev-'`},
		{name: "name that is only the prefix", obj: withName("client.oauth.pinniped.dev-"), wantCode: http.StatusUnprocessableEntity, wantField: "metadata.name",
			wantErr: `OIDCClientSecretRequest.clientsecret.supervisor.tuna.io "client.oauth.pinniped.dev-" is invalid: metadata.name: Invalid value: "client.oauth.pinniped.dev-": must not equal 'client.oauth.pinniped.dev-'`},
		{name: "name not usable in a path", obj: withName("client.oauth.pinniped.dev-a%b"), wantCode: http.StatusUnprocessableEntity, wantField: "metadata.name",
			wantErr: `OIDCClientSecretRequest.clientsecret.supervisor.tuna.io "client.oauth.pinniped.dev-a%b" is invalid: metadata.name: Invalid value: "client.oauth.pinniped.dev-a%b": may not contain '%'`},
		{name: "no name", obj: withName(""), wantCode: http.StatusUnprocessableEntity, wantField: "metadata.name",
			wantErr: `OIDCClientSecretRequest.clientsecret.supervisor.tuna.io "" is invalid: metadata.name: Required value: name or generateName is required`},
		{name: "generateName", obj: &clientsecret.OIDCClientSecretRequest{ObjectMeta: metav1.ObjectMeta{GenerateName: "client.oauth.pinniped.dev-"}},
			wantCode: http.StatusUnprocessableEntity, wantField: "metadata.generateName",
			wantErr: `OIDCClientSecretRequest.clientsecret.supervisor.tuna.io "" is invalid: [metadata.generateName: Invalid value: "client.oauth.pinniped.dev-": generateName is not supported, metadata.name: Required value: name or generateName is required]`},
		{name: "invalid label", obj: &clientsecret.OIDCClientSecretRequest{ObjectMeta: metav1.ObjectMeta{Name: clientName, Labels: map[string]string{"a b": "c"}}},
			wantCode: http.StatusUnprocessableEntity, wantField: "metadata.labels",
			wantErr: `OIDCClientSecretRequest.clientsecret.supervisor.tuna.io "client.oauth.pinniped.dev-app" is invalid: metadata.labels: Invalid value: "a b": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`},
		{name: "another namespace", ctx: nsContext("default"), obj: withName(clientName), wantCode: http.StatusBadRequest,
			wantErr: "namespace must be pinniped-supervisor on OIDCClientSecretRequest, was default"},
		{name: "no namespace", ctx: context.Background(), obj: withName(clientName), wantCode: http.StatusInternalServerError,
			wantErr: "Internal error occurred: no namespace information found in request context"},
		{name: "object namespace differs from the request's", obj: &clientsecret.OIDCClientSecretRequest{ObjectMeta: metav1.ObjectMeta{Name: clientName, Namespace: "default"}},
			wantCode: http.StatusBadRequest, wantErr: "the namespace of the provided object does not match the namespace sent on the request"},
		{name: "dry run", obj: withName(clientName), opts: &metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}, wantCode: http.StatusUnprocessableEntity, wantField: "dryRun",
			wantErr: `OIDCClientSecretRequest.clientsecret.supervisor.tuna.io "client.oauth.pinniped.dev-app" is invalid: dryRun: Unsupported value: ["All"]`},
		{name: "another kind", obj: &corev1.Secret{}, wantCode: http.StatusBadRequest},
		{name: "refused by admission", obj: withName(clientName), wantCode: http.StatusForbidden,
			validation: func(context.Context, runtime.Object) error {
				return apierrors.NewForbidden(gr, clientName, errors.New("no"))
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, bcrypt.MinCost)
			ctx := tt.ctx
			if ctx == nil {
				ctx = nsContext(ns)
			}
			_, err := f.rest.Create(ctx, tt.obj, tt.validation, tt.opts)
			var status apierrors.APIStatus
			if !errors.As(err, &status) || status.Status().Code != tt.wantCode {
				t.Fatalf("error %v, want a Status with code %d", err, tt.wantCode)
			}
			if tt.wantErr != "" && err.Error() != tt.wantErr {
				t.Errorf("error\n%s\nwant\n%s", err, tt.wantErr)
			}
			if tt.wantField != "" {
				details := status.Status().Details
				if details == nil || len(details.Causes) == 0 || details.Causes[0].Field != tt.wantField || details.Group != gr.Group {
					t.Errorf("details %+v, want a cause on %s in group %s", details, tt.wantField, gr.Group)
				}
			}
			for _, a := range f.kube.Actions() {
				if a.GetVerb() != "get" {
					t.Errorf("a rejected request wrote: %v", a)
				}
			}
			if f.log.Len() != 0 {
				t.Errorf("a rejected request was audited: %s", f.log.String())
			}
		})
	}
}

func TestConcurrentChangeIsAConflict(t *testing.T) {
	f := newFixture(t, bcrypt.MinCost)
	f.kube.PrependReactor("create", "secrets", func(kubetesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewAlreadyExists(corev1.Resource("secrets"), "x")
	})
	_, err := f.rest.Create(nsContext(ns), request(clientName, true, false), nil, nil)
	want := `Operation cannot be fulfilled on oidcclientsecretrequests.clientsecret.supervisor.tuna.io "` + clientName +
		`": multiple concurrent secret generation requests for same client`
	if !apierrors.IsConflict(err) || err.Error() != want {
		t.Fatalf("error %v, want Conflict %q", err, want)
	}
}

func TestUnreadableStorageIsAnInternalError(t *testing.T) {
	f := newFixture(t, bcrypt.MinCost)
	_, err := f.kube.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: clientsecrets.SecretName(clientUID)},
		Type:       corev1.SecretTypeOpaque,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.rest.Create(nsContext(ns), request(clientName, true, false), nil, nil)
	if want := `Internal error occurred: getting secret for client "` + clientName + `" failed`; !apierrors.IsInternalError(err) || err.Error() != want {
		t.Fatalf("error %v, want %q, without the storage details", err, want)
	}
}

func TestBrokenRandomSourceIsAnInternalError(t *testing.T) {
	f := newFixture(t, bcrypt.MinCost)
	f.rest.cfg.Rand = iotest.ErrReader(errors.New("no entropy"))
	_, err := f.rest.Create(nsContext(ns), request(clientName, true, false), nil, nil)
	if want := "Internal error occurred: client secret generation failed"; !apierrors.IsInternalError(err) || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
}

// The generic server advertises the list verb and the categories from these interfaces.
func TestDiscovery(t *testing.T) {
	var s rest.Storage = NewREST(Config{Namespace: ns}, gr)
	cp, ok := s.(rest.CategoriesProvider)
	if !ok || !slices.Equal(cp.Categories(), []string{"pinniped"}) {
		t.Errorf("categories: %v", s)
	}
	if _, ok := s.(rest.ShortNamesProvider); ok {
		t.Error("upstream has no short names")
	}
	l, ok := s.(rest.Lister)
	if !ok {
		t.Fatal("list is not served")
	}
	out, err := l.List(genericapirequest.WithNamespace(context.Background(), ns), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.(*clientsecret.OIDCClientSecretRequestList); len(got.Items) != 0 || got.ResourceVersion != "0" {
		t.Errorf("got %+v", got)
	}
	if _, ok := l.NewList().(*clientsecret.OIDCClientSecretRequestList); !ok {
		t.Errorf("NewList gives %T", l.NewList())
	}
}

// Each change of the secrets is audited with Pinniped's event and keys, under the request's
// Kubernetes audit ID, and without the secret; a request that changes nothing is not.
func TestAuditEvents(t *testing.T) {
	f := newFixture(t, bcrypt.MinCost)
	ctx := audit.WithID(nsContext(ns), "kube-audit-id")
	out, err := f.rest.Create(ctx, request(clientName, true, false), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.rest.Create(ctx, request(clientName, false, false), nil, nil); err != nil {
		t.Fatal(err)
	}
	got := f.log.String()
	want := `"message":"OIDCClientSecretRequest Updated Secrets","auditEvent":true,"auditID":"kube-audit-id","clientID":"` + clientName +
		`","generatedSecret":true,"revokedSecrets":false,"totalSecrets":1}` + "\n"
	if strings.Count(got, "\n") != 1 || !strings.HasSuffix(got, want) || strings.Contains(got, out.(*clientsecret.OIDCClientSecretRequest).Status.GeneratedSecret) {
		t.Fatalf("events:\n%s\nwant one ending %s", got, want)
	}
}
