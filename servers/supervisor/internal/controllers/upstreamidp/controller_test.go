package upstreamidp

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	"sealion.dev/core/controller"
	supervisorfake "sealion.dev/core/generated/supervisor/clientset/versioned/fake"
	supervisorinformers "sealion.dev/core/generated/supervisor/informers/externalversions"
	idplisters "sealion.dev/core/generated/supervisor/listers/idp/v1alpha1"
	"sealion.dev/core/testing/fakewatch"
	"sealion.dev/core/testing/oidcissuer"
	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/connectors/githubidp"
	"sealion.dev/servers/supervisor/internal/connectors/kinds"
	"sealion.dev/servers/supervisor/internal/connectors/oidcidp"
	"sealion.dev/servers/supervisor/internal/issuer"
)

const namespace = "supervisor"

type env struct {
	t          *testing.T
	ctx        context.Context
	cancel     context.CancelFunc
	kube       *kubefake.Clientset
	supervisor *supervisorfake.Clientset
	registry   *connectors.Registry
	c          *Controller
	idps       supervisorinformers.SharedInformerFactory
	clock      *clocktesting.FakeClock
}

// newEnv builds the controller of every kind on fake clients holding objects, with synced
// informers; the upstreams are real.
func newEnv(t *testing.T, kubeObjects []runtime.Object, supervisorObjects ...runtime.Object) *env {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	e := &env{
		t: t, ctx: ctx, cancel: cancel,
		kube:       kubefake.NewClientset(kubeObjects...),
		supervisor: supervisorfake.NewSimpleClientset(supervisorObjects...),
		registry:   &connectors.Registry{},
		clock:      clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
	}
	watches := fakewatch.Record(e.kube, e.supervisor)
	kubeFactory := kubeinformers.NewSharedInformerFactoryWithOptions(e.kube, 0, kubeinformers.WithNamespace(namespace))
	e.idps = supervisorinformers.NewSharedInformerFactoryWithOptions(e.supervisor, 0, supervisorinformers.WithNamespace(namespace))
	e.c = New(Config{Namespace: namespace, Labels: map[string]string{"app": "supervisor"}, Clock: e.clock}, Clients{Supervisor: e.supervisor, Kube: e.kube}, kinds.All, Informers{
		IDPs:    e.idps.Idp().V1alpha1(),
		Secrets: kubeFactory.Core().V1().Secrets(), ConfigMaps: kubeFactory.Core().V1().ConfigMaps(),
	}, e.registry)
	kubeFactory.Start(ctx.Done())
	e.idps.Start(ctx.Done())
	t.Cleanup(func() {
		cancel()
		kubeFactory.Shutdown()
		e.idps.Shutdown()
	})
	for _, synced := range []cache.InformerSynced{
		kubeFactory.Core().V1().Secrets().Informer().HasSynced, kubeFactory.Core().V1().ConfigMaps().Informer().HasSynced,
	} {
		if !waitFor(ctx, synced) {
			t.Fatal("informers did not sync")
		}
	}
	for _, k := range e.c.kinds {
		if !waitFor(ctx, k.kind.Informer(e.idps.Idp().V1alpha1()).HasSynced) {
			t.Fatal("informers did not sync")
		}
	}
	resources := []string{"secrets", "configmaps"}
	for _, k := range kinds.All {
		resources = append(resources, strings.ToLower(k.Name)+"s")
	}
	watches.Wait(t, 10*time.Second, resources...)
	return e
}

func waitFor(ctx context.Context, cond func() bool) bool {
	return wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	}) == nil
}

// sync syncs every object of every kind once and fails the test on error.
func (e *env) sync() {
	e.t.Helper()
	for _, k := range e.c.kinds {
		names, err := k.keys()
		if err != nil {
			e.t.Fatal(err)
		}
		// Deleted objects are synced too, as their deletion events would have them.
		for name := range k.probes {
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
		for _, name := range names {
			if err := k.sync(e.ctx, name); err != nil {
				e.t.Fatalf("sync of %s %s: %v", k.kind.Name, name, err)
			}
		}
	}
}

// ready reports whether the registry holds a connector of typ for name.
func (e *env) ready(typ issuer.IdentityProviderType, name string) bool {
	_, ok := e.registry.Get(typ, namespace, name)
	return ok
}

// oidcProviders reads the OIDCIdentityProviders from the controller's cache.
func (e *env) oidcProviders() idplisters.OIDCIdentityProviderNamespaceLister {
	return e.idps.Idp().V1alpha1().OIDCIdentityProviders().Lister().OIDCIdentityProviders(namespace)
}

// statusUpdates counts the UpdateStatus calls made so far.
func (e *env) statusUpdates() int {
	n := 0
	for _, a := range e.supervisor.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

// waitForCache waits until seen reports that the controller's informer caches show what the
// test just wrote.
func (e *env) waitForCache(what string, seen func() bool) {
	e.t.Helper()
	if !waitFor(e.ctx, seen) {
		e.t.Fatalf("the cache never showed %s", what)
	}
}

func secret(name string, typ corev1.SecretType, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, ResourceVersion: "1"}, Type: typ, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func objectMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: namespace, UID: types.UID(name + "-uid"), Generation: 1}
}

// summary is a condition's type, status and reason, what the tests compare.
type summary struct{ Type, Status, Reason string }

func summarize(t *testing.T, st idpv1alpha1.IdentityProviderStatus) map[string]summary {
	t.Helper()
	out := map[string]summary{}
	for _, c := range st.Conditions {
		if c.ObservedGeneration != 1 {
			t.Errorf("condition %s has observedGeneration %d, want 1", c.Type, c.ObservedGeneration)
		}
		out[c.Type] = summary{c.Type, string(c.Status), c.Reason}
	}
	return out
}

func checkStatus(t *testing.T, name string, st idpv1alpha1.IdentityProviderStatus, phase idpv1alpha1.Phase, want ...summary) {
	t.Helper()
	if st.Phase != phase {
		t.Errorf("%s: phase %q, want %q (conditions %+v)", name, st.Phase, phase, st.Conditions)
	}
	got := summarize(t, st)
	for _, w := range want {
		if got[w.Type] != w {
			t.Errorf("%s: condition %s is %+v, want %+v", name, w.Type, got[w.Type], w)
		}
	}
}

func ok(condType string) summary {
	return summary{condType, string(metav1.ConditionTrue), idpv1alpha1.ReasonSuccess}
}

func TestOIDC(t *testing.T) {
	good := oidcissuer.New(t)
	wrongIssuer := oidcissuer.New(t, oidcissuer.WithDiscoveryOverrides(map[string]any{"issuer": "https://elsewhere.example.com"}))
	gone := oidcissuer.New(t)
	gone.Close()
	caData := func(iss *oidcissuer.Issuer) *idpv1alpha1.TLSSpec {
		return &idpv1alpha1.TLSSpec{CertificateAuthorityData: base64.StdEncoding.EncodeToString(iss.CABundle)}
	}
	idp := func(name, iss string, tls *idpv1alpha1.TLSSpec, mutate ...func(*idpv1alpha1.OIDCIdentityProviderSpec)) *idpv1alpha1.OIDCIdentityProvider {
		o := &idpv1alpha1.OIDCIdentityProvider{ObjectMeta: objectMeta(name), Spec: idpv1alpha1.OIDCIdentityProviderSpec{
			Issuer: iss, TLS: tls, Client: idpv1alpha1.OIDCClientCredentials{SecretName: "client"},
		}}
		for _, m := range mutate {
			m(&o.Spec)
		}
		return o
	}
	withSecret := func(name string) func(*idpv1alpha1.OIDCIdentityProviderSpec) {
		return func(s *idpv1alpha1.OIDCIdentityProviderSpec) { s.Client.SecretName = name }
	}
	e := newEnv(t,
		[]runtime.Object{
			secret("client", oidcidp.ClientSecretType, map[string]string{"clientID": "supervisor", "clientSecret": "shh"}),
			secret("wrong-type", corev1.SecretTypeOpaque, map[string]string{"clientID": "supervisor", "clientSecret": "shh"}),
			secret("no-secret-key", oidcidp.ClientSecretType, map[string]string{"clientID": "supervisor"}),
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ca", Namespace: namespace}, Data: map[string]string{"ca.crt": string(good.CABundle)}},
		},
		idp("ready", good.Issuer, caData(good), func(s *idpv1alpha1.OIDCIdentityProviderSpec) {
			s.AuthorizationConfig.AdditionalScopes = []string{"openid", "email", "groups"}
			s.Claims = idpv1alpha1.OIDCClaims{Username: "email", Groups: "groups"}
		}),
		idp("ca-from-configmap", good.Issuer, &idpv1alpha1.TLSSpec{CertificateAuthorityDataSource: &idpv1alpha1.CertificateAuthorityDataSourceSpec{
			Kind: idpv1alpha1.CertificateAuthorityDataSourceKindConfigMap, Name: "ca", Key: "ca.crt",
		}}),
		idp("no-secret", good.Issuer, caData(good), withSecret("missing")),
		idp("wrong-type", good.Issuer, caData(good), withSecret("wrong-type")),
		idp("missing-keys", good.Issuer, caData(good), withSecret("no-secret-key")),
		idp("bad-params", good.Issuer, caData(good), func(s *idpv1alpha1.OIDCIdentityProviderSpec) {
			s.AuthorizationConfig.AdditionalAuthorizeParameters = []idpv1alpha1.Parameter{{Name: "prompt", Value: "consent"}, {Name: "client_id", Value: "x"}}
		}),
		idp("unreachable", gone.Issuer, caData(gone)),
		idp("untrusted", good.Issuer, nil),
		idp("issuer-mismatch", wrongIssuer.Issuer, caData(wrongIssuer)),
		idp("bad-ca", good.Issuer, &idpv1alpha1.TLSSpec{CertificateAuthorityData: "not base64!"}),
		idp("http-issuer", "http://127.0.0.1:1", nil),
	)
	e.sync()

	creds, disc := idpv1alpha1.ConditionClientCredentialsSecretValid, idpv1alpha1.ConditionOIDCDiscoverySucceeded
	params, tls := idpv1alpha1.ConditionAdditionalAuthorizeParametersValid, idpv1alpha1.ConditionTLSConfigurationValid
	false_ := func(condType, reason string) summary { return summary{condType, string(metav1.ConditionFalse), reason} }
	tests := []struct {
		name  string
		phase idpv1alpha1.Phase
		want  []summary
	}{
		{"ready", idpv1alpha1.PhaseReady, []summary{ok(creds), ok(disc), ok(params), ok(tls)}},
		{"ca-from-configmap", idpv1alpha1.PhaseReady, []summary{ok(creds), ok(disc), ok(params), ok(tls)}},
		{"no-secret", idpv1alpha1.PhaseError, []summary{false_(creds, idpv1alpha1.ReasonSecretNotFound), ok(disc)}},
		{"wrong-type", idpv1alpha1.PhaseError, []summary{false_(creds, idpv1alpha1.ReasonSecretWrongType)}},
		{"missing-keys", idpv1alpha1.PhaseError, []summary{false_(creds, idpv1alpha1.ReasonSecretMissingKeys)}},
		{"bad-params", idpv1alpha1.PhaseError, []summary{ok(creds), ok(disc), false_(params, idpv1alpha1.ReasonDisallowedParameterName)}},
		{"unreachable", idpv1alpha1.PhaseError, []summary{false_(disc, idpv1alpha1.ReasonUnreachable), ok(tls)}},
		{"untrusted", idpv1alpha1.PhaseError, []summary{false_(disc, idpv1alpha1.ReasonUnreachable), ok(tls)}},
		{"issuer-mismatch", idpv1alpha1.PhaseError, []summary{false_(disc, idpv1alpha1.ReasonUnreachable)}},
		{"bad-ca", idpv1alpha1.PhaseError, []summary{
			false_(tls, idpv1alpha1.ReasonInvalidTLSConfig),
			false_(disc, idpv1alpha1.ReasonInvalidTLSConfig),
		}},
		{"http-issuer", idpv1alpha1.PhaseError, []summary{false_(disc, idpv1alpha1.ReasonUnreachable)}},
	}
	for _, tt := range tests {
		got, err := e.supervisor.IdpV1alpha1().OIDCIdentityProviders(namespace).Get(e.ctx, tt.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Status.Conditions) != 4 {
			t.Errorf("%s: %d conditions, want 4: %+v", tt.name, len(got.Status.Conditions), got.Status.Conditions)
		}
		checkStatus(t, tt.name, got.Status, tt.phase, tt.want...)
		if !slices.IsSortedFunc(got.Status.Conditions, func(a, b metav1.Condition) int { return strings.Compare(a.Type, b.Type) }) {
			t.Errorf("%s: conditions not sorted by type, as upstream stores them: %+v", tt.name, got.Status.Conditions)
		}
		inRegistry := e.ready(issuer.TypeOIDC, tt.name)
		if wantIn := tt.phase == idpv1alpha1.PhaseReady; inRegistry != wantIn {
			t.Errorf("%s: in the registry: %v, want %v", tt.name, inRegistry, wantIn)
		}
	}
}

// TestWritesOnlyOnChange checks that resyncs write no status while nothing changes, and that the
// registry follows the object and its Secret.
func TestWritesOnlyOnChange(t *testing.T) {
	iss := oidcissuer.New(t)
	idp := &idpv1alpha1.OIDCIdentityProvider{ObjectMeta: objectMeta("upstream"), Spec: idpv1alpha1.OIDCIdentityProviderSpec{
		Issuer: iss.Issuer, Client: idpv1alpha1.OIDCClientCredentials{SecretName: "client"},
		TLS: &idpv1alpha1.TLSSpec{CertificateAuthorityData: base64.StdEncoding.EncodeToString(iss.CABundle)},
	}}
	e := newEnv(t, []runtime.Object{secret("client", oidcidp.ClientSecretType, map[string]string{"clientID": "a", "clientSecret": "b"})}, idp)
	e.sync()
	if !e.ready(issuer.TypeOIDC, "upstream") || e.statusUpdates() != 1 {
		t.Fatalf("first sync: ready %v, %d status updates; want ready and 1", e.ready(issuer.TypeOIDC, "upstream"), e.statusUpdates())
	}
	e.waitForCache("the status update", func() bool {
		got, err := e.oidcProviders().Get("upstream")
		return err == nil && got.Status.Phase == idpv1alpha1.PhaseReady
	})

	e.sync()
	e.clock.Step(connectors.ProbeTTL)
	e.sync()
	if e.statusUpdates() != 1 {
		t.Errorf("resyncs without changes, one with a repeated probe, wrote the status again (%d updates)", e.statusUpdates())
	}

	// A client Secret of the wrong type makes the provider unusable.
	s := secret("client", corev1.SecretTypeOpaque, map[string]string{"clientID": "a2", "clientSecret": "b2"})
	s.ResourceVersion = "2"
	if _, err := e.kube.CoreV1().Secrets(namespace).Update(e.ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	k := e.c.kinds[slices.IndexFunc(e.c.kinds, func(k *kindController) bool { return k.kind.Type == issuer.TypeOIDC })]
	e.waitForCache("the new Secret", func() bool {
		got, err := k.secrets.Get("client")
		return err == nil && got.ResourceVersion == "2"
	})
	e.sync()
	if e.ready(issuer.TypeOIDC, "upstream") || e.statusUpdates() != 2 {
		t.Errorf("after the Secret changed: ready %v, %d status updates; want not ready and 2", e.ready(issuer.TypeOIDC, "upstream"), e.statusUpdates())
	}

	// Deleting the provider removes it from the registry and forgets its probe.
	if err := e.supervisor.IdpV1alpha1().OIDCIdentityProviders(namespace).Delete(e.ctx, "upstream", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitForCache("the deletion", func() bool {
		l, err := e.oidcProviders().List(labels.Everything())
		return err == nil && len(l) == 0
	})
	e.sync()
	if e.ready(issuer.TypeOIDC, "upstream") {
		t.Error("a deleted OIDCIdentityProvider is still in the registry")
	}
	if len(k.probes) != 0 {
		t.Error("the probe cache still holds a deleted OIDCIdentityProvider")
	}
}

// TestStatusWrites checks that a status from an older generation is rewritten in one update that
// keeps the lastTransitionTime of conditions whose status did not change.
func TestStatusWrites(t *testing.T) {
	iss := oidcissuer.New(t)
	old := metav1.NewTime(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))
	idp := &idpv1alpha1.OIDCIdentityProvider{ObjectMeta: objectMeta("ready"), Spec: idpv1alpha1.OIDCIdentityProviderSpec{
		Issuer: iss.Issuer, Client: idpv1alpha1.OIDCClientCredentials{SecretName: "client"},
		TLS: &idpv1alpha1.TLSSpec{CertificateAuthorityData: base64.StdEncoding.EncodeToString(iss.CABundle)},
	}}
	idp.Generation = 2
	idp.Status.Conditions = []metav1.Condition{{
		Type: idpv1alpha1.ConditionClientCredentialsSecretValid, Status: metav1.ConditionTrue, Reason: idpv1alpha1.ReasonSuccess,
		ObservedGeneration: 1, LastTransitionTime: old,
	}}
	e := newEnv(t, []runtime.Object{secret("client", oidcidp.ClientSecretType, map[string]string{"clientID": "a", "clientSecret": "b"})}, idp)
	e.sync()
	got, err := e.supervisor.IdpV1alpha1().OIDCIdentityProviders(namespace).Get(e.ctx, "ready", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := meta.FindStatusCondition(got.Status.Conditions, idpv1alpha1.ConditionClientCredentialsSecretValid)
	if c == nil || c.ObservedGeneration != 2 || !c.LastTransitionTime.Equal(&old) {
		t.Errorf("ClientCredentialsSecretValid = %+v, want observedGeneration 2 and the old transition time", c)
	}
	if got.Status.Phase != idpv1alpha1.PhaseReady {
		t.Errorf("phase %q, want Ready", got.Status.Phase)
	}
	var updates []clienttesting.Action
	for _, a := range e.supervisor.Actions() {
		if a.GetVerb() == "update" {
			updates = append(updates, a)
		}
	}
	if len(updates) != 1 || updates[0].GetSubresource() != "status" {
		t.Errorf("updates = %v, want one status update", updates)
	}
}

// TestRunReactsToEvents checks the wiring of Run: the informers' events, not a resync, make the
// registry follow the providers and their Secrets.
func TestRunReactsToEvents(t *testing.T) {
	iss := oidcissuer.New(t)
	e := newEnv(t, nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.c.Run(e.ctx)
	}()
	inRegistry := func(want bool) func() bool {
		return func() bool {
			return e.ready(issuer.TypeOIDC, "upstream") == want
		}
	}

	_, err := e.supervisor.IdpV1alpha1().OIDCIdentityProviders(namespace).Create(e.ctx, &idpv1alpha1.OIDCIdentityProvider{
		ObjectMeta: objectMeta("upstream"),
		Spec: idpv1alpha1.OIDCIdentityProviderSpec{
			Issuer: iss.Issuer, Client: idpv1alpha1.OIDCClientCredentials{SecretName: "client"},
			TLS: &idpv1alpha1.TLSSpec{CertificateAuthorityData: base64.StdEncoding.EncodeToString(iss.CABundle)},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.kube.CoreV1().Secrets(namespace).Create(e.ctx,
		secret("client", oidcidp.ClientSecretType, map[string]string{"clientID": "a", "clientSecret": "b"}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitForCache("the OIDCIdentityProvider in the registry", inRegistry(true))

	if err := e.kube.CoreV1().Secrets(namespace).Delete(e.ctx, "client", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitForCache("the OIDCIdentityProvider leaving the registry", inRegistry(false))
	got, err := e.supervisor.IdpV1alpha1().OIDCIdentityProviders(namespace).Get(e.ctx, "upstream", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, idpv1alpha1.ConditionClientCredentialsSecretValid); c == nil || c.Reason != idpv1alpha1.ReasonSecretNotFound {
		t.Errorf("after the Secret was deleted ClientCredentialsSecretValid = %+v, want reason SecretNotFound", c)
	}
	e.cancel()
	<-done
}

// runOIDCUpstream runs the controller, until the test ends, on the OIDCIdentityProvider
// "upstream" of a real issuer, which the test may close.
func runOIDCUpstream(t *testing.T) (*env, *oidcissuer.Issuer) {
	iss := oidcissuer.New(t)
	e := newEnv(t, []runtime.Object{secret("client", oidcidp.ClientSecretType, map[string]string{"clientID": "a", "clientSecret": "b"})},
		&idpv1alpha1.OIDCIdentityProvider{ObjectMeta: objectMeta("upstream"), Spec: idpv1alpha1.OIDCIdentityProviderSpec{
			Issuer: iss.Issuer, Client: idpv1alpha1.OIDCClientCredentials{SecretName: "client"},
			TLS: &idpv1alpha1.TLSSpec{CertificateAuthorityData: base64.StdEncoding.EncodeToString(iss.CABundle)},
		}})
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.c.Run(e.ctx)
	}()
	t.Cleanup(func() {
		e.cancel()
		<-done
	})
	return e, iss
}

// discovery is the upstream's OIDCDiscoverySucceeded condition as stored.
func (e *env) discovery() *metav1.Condition {
	e.t.Helper()
	got, err := e.supervisor.IdpV1alpha1().OIDCIdentityProviders(namespace).Get(e.ctx, "upstream", metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return meta.FindStatusCondition(got.Status.Conditions, idpv1alpha1.ConditionOIDCDiscoverySucceeded)
}

// TestUnreachableUpstream: a login that finds the upstream unreachable makes the controller probe
// it at once, rather than at the end of connectors.ProbeTTL; the status shows the outage while the
// registry keeps the last good connector, and further reports cause no probe.
func TestUnreachableUpstream(t *testing.T) {
	e, iss := runOIDCUpstream(t)
	e.waitForCache("the OIDCIdentityProvider in the registry", func() bool { return e.ready(issuer.TypeOIDC, "upstream") })

	iss.Close()
	e.registry.Unreachable(issuer.TypeOIDC, "elsewhere", "upstream") // another namespace's
	e.registry.Unreachable(issuer.TypeOIDC, namespace, "upstream")
	e.waitForCache("OIDCDiscoverySucceeded False", func() bool {
		c := e.discovery()
		return c != nil && c.Status == metav1.ConditionFalse
	})
	c := e.discovery()
	if c.Reason != idpv1alpha1.ReasonUnreachable || !strings.Contains(c.Message, iss.Issuer) {
		t.Errorf("OIDCDiscoverySucceeded = %+v, want reason Unreachable naming the issuer", c)
	}
	got, err := e.supervisor.IdpV1alpha1().OIDCIdentityProviders(namespace).Get(e.ctx, "upstream", metav1.GetOptions{})
	if err != nil || got.Status.Phase != idpv1alpha1.PhaseError {
		t.Errorf("phase %q (%v), want Error", got.Status.Phase, err)
	}
	if !e.ready(issuer.TypeOIDC, "upstream") {
		t.Error("the registry dropped the last good connector of an upstream that is only unreachable")
	}

	// The probe failed: a further report finds nothing to expire, and asks for no sync.
	k := e.c.kinds[slices.IndexFunc(e.c.kinds, func(k *kindController) bool { return k.kind.Type == issuer.TypeOIDC })]
	k.mu.Lock()
	slot := k.probes["upstream"]
	k.mu.Unlock()
	if slot.cache.Expire() {
		t.Error("the failed probe left a success to expire")
	}
}

// TestProbesAgainWhenTheSuccessGoesStale: an upstream that goes down while no login reaches this
// replica (only the leader writes status; the logins may all reach the others) shows in the
// status once the last success is ProbeTTL old, not at the resync after. The success here is
// half a resync old at one resync, so that resync leaves it be; the next resync would come
// ProbeTTL after it plus half a resync.
func TestProbesAgainWhenTheSuccessGoesStale(t *testing.T) {
	e, iss := runOIDCUpstream(t)
	k := e.c.kinds[slices.IndexFunc(e.c.kinds, func(k *kindController) bool { return k.kind.Type == issuer.TypeOIDC })]
	probedNow := func() bool { // the last success is this instant's on the fake clock
		k.mu.Lock()
		slot := k.probes["upstream"]
		k.mu.Unlock()
		left, ok := time.Duration(0), false
		if slot != nil {
			left, ok = slot.cache.FreshFor()
		}
		return ok && left == connectors.ProbeTTL
	}
	e.waitForCache("the first probe", probedNow)

	// Half a resync later a report, with the upstream still up, makes the controller probe again.
	e.clock.Step(controller.DefaultResync / 2)
	e.registry.Unreachable(issuer.TypeOIDC, namespace, "upstream")
	e.waitForCache("the probe after the report", probedNow)
	// The resync finds that success fresh; then the upstream goes down.
	e.clock.Step(controller.DefaultResync / 2)
	iss.Close()
	e.clock.Step(connectors.ProbeTTL - controller.DefaultResync/2)
	e.waitForCache("OIDCDiscoverySucceeded False once the success went stale", func() bool {
		c := e.discovery()
		return c != nil && c.Status == metav1.ConditionFalse
	})
}

// TestRealProbesReportFailures runs the real LDAP, Active Directory and GitHub probes against a
// closed loopback port: each failure lands in its connection condition, never in a sync error.
func TestRealProbesReportFailures(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	_ = l.Close()
	bind := secret("bind", corev1.SecretTypeBasicAuth, map[string]string{"username": "cn=svc", "password": "pw"})
	gh := secret("github", githubidp.ClientSecretType, map[string]string{"clientID": "id", "clientSecret": "shh"})
	e := newEnv(t, []runtime.Object{bind, gh},
		&idpv1alpha1.LDAPIdentityProvider{ObjectMeta: objectMeta("ldap"), Spec: idpv1alpha1.LDAPIdentityProviderSpec{
			Host: closed, Bind: idpv1alpha1.LDAPIdentityProviderBind{SecretName: "bind"},
			UserSearch: idpv1alpha1.LDAPIdentityProviderUserSearch{
				Base:       "ou=people,dc=example",
				Attributes: idpv1alpha1.LDAPIdentityProviderUserSearchAttributes{Username: "uid", UID: "entryUUID"},
			},
		}},
		&idpv1alpha1.ActiveDirectoryIdentityProvider{ObjectMeta: objectMeta("ad"), Spec: idpv1alpha1.ActiveDirectoryIdentityProviderSpec{
			Host: closed, Bind: idpv1alpha1.ActiveDirectoryIdentityProviderBind{SecretName: "bind"},
		}},
		&idpv1alpha1.GitHubIdentityProvider{ObjectMeta: objectMeta("github"), Spec: idpv1alpha1.GitHubIdentityProviderSpec{
			GitHubAPI:           idpv1alpha1.GitHubAPIConfig{Host: ptr.To(closed)},
			AllowAuthentication: idpv1alpha1.GitHubAllowAuthenticationSpec{Organizations: idpv1alpha1.GitHubOrganizationsSpec{Allowed: []string{"seals"}}},
			Client:              idpv1alpha1.GitHubClientSpec{SecretName: "github"},
		}},
	)
	e.sync()
	client := e.supervisor.IdpV1alpha1()
	ldap, err := client.LDAPIdentityProviders(namespace).Get(e.ctx, "ldap", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkStatus(t, "ldap", ldap.Status, idpv1alpha1.PhaseError,
		summary{idpv1alpha1.ConditionLDAPConnectionValid, string(metav1.ConditionFalse), idpv1alpha1.ReasonLDAPConnectionError})
	ad, err := client.ActiveDirectoryIdentityProviders(namespace).Get(e.ctx, "ad", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkStatus(t, "ad", ad.Status, idpv1alpha1.PhaseError,
		summary{idpv1alpha1.ConditionSearchBaseFound, string(metav1.ConditionFalse), idpv1alpha1.ReasonErrorFetchingSearchBase})
	github, err := client.GitHubIdentityProviders(namespace).Get(e.ctx, "github", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkStatus(t, "github", github.Status, idpv1alpha1.PhaseError,
		summary{idpv1alpha1.ConditionGitHubConnectionValid, string(metav1.ConditionFalse), idpv1alpha1.ReasonUnableToDialServer})
}

// TestLastGoodConnectorAcrossRestarts: the controller records what each upstream was last probed
// successfully with; a Supervisor that starts while the upstreams are down keeps a connector for
// each object whose inputs are those recorded, so that refreshes answer temporarily_unavailable
// and succeed once the upstream is back, while the status shows the outage. Inputs that changed
// since, and Active Directory search bases that only the server could tell, get none.
func TestLastGoodConnectorAcrossRestarts(t *testing.T) {
	iss := oidcissuer.New(t)
	github := httptest.NewTLSServer(http.NotFoundHandler())
	defer github.Close()
	githubCA := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: github.Certificate().Raw})
	bind := secret("bind", corev1.SecretTypeBasicAuth, map[string]string{"username": "cn=svc", "password": "pw"})
	otherBind := secret("other-bind", corev1.SecretTypeBasicAuth, map[string]string{"username": "cn=svc", "password": "pw"})
	otherBind.ResourceVersion = "2" // resource versions are unique in a cluster
	kubeObjects := []runtime.Object{bind, otherBind,
		secret("github", githubidp.ClientSecretType, map[string]string{"clientID": "id", "clientSecret": "shh"}),
		secret("client", oidcidp.ClientSecretType, map[string]string{"clientID": "a", "clientSecret": "b"}),
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String() // no LDAP server in a unit test: these are down from the start
	_ = l.Close()
	ldapSpec := func(bindSecret string) idpv1alpha1.LDAPIdentityProviderSpec {
		return idpv1alpha1.LDAPIdentityProviderSpec{
			Host: closed, Bind: idpv1alpha1.LDAPIdentityProviderBind{SecretName: bindSecret},
			UserSearch: idpv1alpha1.LDAPIdentityProviderUserSearch{
				Base:       "ou=people,dc=example",
				Attributes: idpv1alpha1.LDAPIdentityProviderUserSearchAttributes{Username: "uid", UID: "entryUUID"},
			},
		}
	}
	adSpec := func(withBases bool) idpv1alpha1.ActiveDirectoryIdentityProviderSpec {
		s := idpv1alpha1.ActiveDirectoryIdentityProviderSpec{Host: closed, Bind: idpv1alpha1.ActiveDirectoryIdentityProviderBind{SecretName: "bind"}}
		if withBases {
			s.UserSearch.Base, s.GroupSearch.Base = "dc=example", "dc=example"
		}
		return s
	}
	objects := func() []runtime.Object {
		return []runtime.Object{
			&idpv1alpha1.OIDCIdentityProvider{ObjectMeta: objectMeta("oidc"), Spec: idpv1alpha1.OIDCIdentityProviderSpec{
				Issuer: iss.Issuer, Client: idpv1alpha1.OIDCClientCredentials{SecretName: "client"},
				TLS: &idpv1alpha1.TLSSpec{CertificateAuthorityData: base64.StdEncoding.EncodeToString(iss.CABundle)},
			}},
			&idpv1alpha1.GitHubIdentityProvider{ObjectMeta: objectMeta("github"), Spec: idpv1alpha1.GitHubIdentityProviderSpec{
				GitHubAPI: idpv1alpha1.GitHubAPIConfig{Host: ptr.To(github.Listener.Addr().String()),
					TLS: &idpv1alpha1.TLSSpec{CertificateAuthorityData: base64.StdEncoding.EncodeToString(githubCA)}},
				AllowAuthentication: idpv1alpha1.GitHubAllowAuthenticationSpec{Organizations: idpv1alpha1.GitHubOrganizationsSpec{Allowed: []string{"seals"}}},
				Client:              idpv1alpha1.GitHubClientSpec{SecretName: "github"},
			}},
			&idpv1alpha1.LDAPIdentityProvider{ObjectMeta: objectMeta("ldap"), Spec: ldapSpec("bind")},
			&idpv1alpha1.LDAPIdentityProvider{ObjectMeta: objectMeta("ldap-changed"), Spec: ldapSpec("other-bind")},
			&idpv1alpha1.ActiveDirectoryIdentityProvider{ObjectMeta: objectMeta("ad"), Spec: adSpec(true)},
			&idpv1alpha1.ActiveDirectoryIdentityProvider{ObjectMeta: objectMeta("ad-discovered-bases"), Spec: adSpec(false)},
		}
	}

	// The first process reaches the OIDC issuer and GitHub, and records it.
	first := newEnv(t, kubeObjects, objects()...)
	first.sync()
	record, err := first.kube.CoreV1().Secrets(namespace).Get(first.ctx, LastGoodSecretName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("no record of the successful probes: %v", err)
	}
	if record.Type != LastGoodSecretType || record.Labels["app"] != "supervisor" || len(record.Data) != 2 ||
		len(record.Data["oidc-uid"]) == 0 || len(record.Data["github-uid"]) == 0 {
		t.Fatalf("the record: type %q, labels %v, data %q; want the OIDC and GitHub objects' fingerprints", record.Type, record.Labels, record.Data)
	}
	// The LDAP servers were reached by a process before it, with the bind Secret "ldap" and "ad"
	// have now (the LDAP kinds' fingerprint: generation, bind Secret, CA bundle), and
	// "ldap-changed" with another Secret.
	record = record.DeepCopy()
	record.ResourceVersion = ""
	record.Data["ldap-uid"] = []byte(connectors.Fingerprint(1, bind, nil))
	record.Data["ad-uid"] = []byte(connectors.Fingerprint(1, bind, nil))
	record.Data["ad-discovered-bases-uid"] = []byte(connectors.Fingerprint(1, bind, nil))
	record.Data["ldap-changed-uid"] = []byte(connectors.Fingerprint(1, bind, nil))
	first.cancel()

	// Every upstream is down when the next process starts.
	iss.Close()
	github.Close()
	second := newEnv(t, append(slices.Clone(kubeObjects), record), objects()...)
	second.sync()
	for _, want := range []struct {
		typ       issuer.IdentityProviderType
		name      string
		connector bool
	}{
		{issuer.TypeOIDC, "oidc", true},
		{issuer.TypeGitHub, "github", true},
		{issuer.TypeLDAP, "ldap", true},
		{issuer.TypeLDAP, "ldap-changed", false},
		{issuer.TypeActiveDirectory, "ad", true},
		{issuer.TypeActiveDirectory, "ad-discovered-bases", false},
	} {
		if got := second.ready(want.typ, want.name); got != want.connector {
			t.Errorf("%s %s: connector %v, want %v", want.typ, want.name, got, want.connector)
		}
	}
	oidc, err := second.supervisor.IdpV1alpha1().OIDCIdentityProviders(namespace).Get(second.ctx, "oidc", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkStatus(t, "oidc", oidc.Status, idpv1alpha1.PhaseError,
		summary{idpv1alpha1.ConditionOIDCDiscoverySucceeded, string(metav1.ConditionFalse), idpv1alpha1.ReasonUnreachable}, ok(idpv1alpha1.ConditionTLSConfigurationValid))

	// A deleted object's record goes with it.
	if err := second.supervisor.IdpV1alpha1().LDAPIdentityProviders(namespace).Delete(second.ctx, "ldap", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	second.waitForCache("the LDAPIdentityProvider deleted", func() bool {
		_, err := second.idps.Idp().V1alpha1().LDAPIdentityProviders().Lister().LDAPIdentityProviders(namespace).Get("ldap")
		return apierrors.IsNotFound(err)
	})
	second.sync()
	kept, err := second.kube.CoreV1().Secrets(namespace).Get(second.ctx, LastGoodSecretName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := kept.Data["ldap-uid"]; ok || len(kept.Data["oidc-uid"]) == 0 {
		t.Errorf("after the deletion the record holds %q; want the deleted object's entry gone, the others kept", slices.Sorted(maps.Keys(kept.Data)))
	}
}
