package authenticator

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	authv1alpha1 "sealion.dev/core/apis/concierge/authentication/v1alpha1"
	conciergefake "sealion.dev/core/generated/concierge/clientset/versioned/fake"
	conciergeinformers "sealion.dev/core/generated/concierge/informers/externalversions"
	authlisters "sealion.dev/core/generated/concierge/listers/authentication/v1alpha1"
	"sealion.dev/core/testing/fakewatch"
	"sealion.dev/core/testing/oidcissuer"
	"sealion.dev/servers/concierge/internal/authncache"
)

const (
	namespace   = "concierge"
	waitTimeout = 30 * time.Second
)

// The condition types each kind must report, in the order the steps run, Ready last.
var (
	jwtConditionTypes = []string{
		authv1alpha1.ConditionTLSConfigurationValid, authv1alpha1.ConditionIssuerURLValid,
		authv1alpha1.ConditionDiscoveryURLValid, authv1alpha1.ConditionJWKSURLValid,
		authv1alpha1.ConditionJWKSFetchValid, authv1alpha1.ConditionAuthenticatorValid, authv1alpha1.ConditionReady,
	}
	webhookConditionTypes = []string{
		authv1alpha1.ConditionTLSConfigurationValid, authv1alpha1.ConditionEndpointURLValid,
		authv1alpha1.ConditionWebhookConnectionValid, authv1alpha1.ConditionAuthenticatorValid, authv1alpha1.ConditionReady,
	}
)

// env runs both controllers against fake clientsets and real informers.
type env struct {
	t         *testing.T
	group     string
	concierge *conciergefake.Clientset
	kube      *kubefake.Clientset
	cache     *authncache.Cache
	jwtLister authlisters.JWTAuthenticatorLister
	jwtSyncs  atomic.Int64 // JWTAuthenticator syncs started
	jwt       *Controller[*authv1alpha1.JWTAuthenticator]
	webhook   *Controller[*authv1alpha1.WebhookAuthenticator]
	ctx       context.Context
}

type envOptions struct {
	group  string        // the cache key's API group; the default group when empty
	resync time.Duration // the controllers' resync period; timing's when zero
	// noRetry makes failed syncs wait an hour before their retry, and the resync an hour, so
	// that only events re-queue.
	noRetry bool
	// setup runs after the clients exist and before anything starts, e.g. to add reactors.
	setup func(*env)
}

// newEnv starts informers and both controllers, and returns once every watch is established, so
// objects created afterwards are seen (the fake clientsets do not replay missed events).
func newEnv(t *testing.T, opts envOptions, kubeObjects ...runtime.Object) *env {
	t.Helper()
	if opts.group == "" {
		opts.group = authv1alpha1.GroupName
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &env{
		t: t, group: opts.group, ctx: ctx,
		concierge: conciergefake.NewSimpleClientset(),
		kube:      kubefake.NewClientset(kubeObjects...),
		cache:     &authncache.Cache{},
	}
	watches := fakewatch.Record(e.concierge, e.kube)
	if opts.setup != nil {
		opts.setup(e)
	}

	kubeFactory := kubeinformers.NewSharedInformerFactoryWithOptions(e.kube, 0, kubeinformers.WithNamespace(namespace))
	crFactory := conciergeinformers.NewSharedInformerFactory(e.concierge, 0)
	shared := Shared{
		APIGroup: opts.group, Namespace: namespace, Cache: e.cache,
		Secrets: kubeFactory.Core().V1().Secrets(), ConfigMaps: kubeFactory.Core().V1().ConfigMaps(),
	}
	authInformers := crFactory.Authentication().V1alpha1()
	e.jwtLister = authInformers.JWTAuthenticators().Lister()
	loop := timing
	if opts.resync != 0 {
		loop.Resync = opts.resync
	}
	if opts.noRetry {
		loop.Resync, loop.MinBackoff, loop.MaxBackoff = time.Hour, time.Hour, time.Hour
	}
	jwts := jwtKind(e.concierge, authInformers.JWTAuthenticators())
	get := jwts.get
	jwts.get = func(name string) (*authv1alpha1.JWTAuthenticator, error) {
		e.jwtSyncs.Add(1)
		return get(name)
	}
	e.jwt = newController(shared, jwts, loop)
	e.webhook = newController(shared, webhookKind(e.concierge, authInformers.WebhookAuthenticators()), loop)

	kubeFactory.Start(ctx.Done())
	crFactory.Start(ctx.Done())
	var wg sync.WaitGroup
	for _, c := range []interface{ Run(context.Context) }{e.jwt, e.webhook} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.Run(ctx)
		}()
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		kubeFactory.Shutdown()
		crFactory.Shutdown()
		for _, key := range e.cache.Keys() {
			e.cache.Delete(key) // stops JWKS refreshes
		}
	})

	watches.Wait(t, waitTimeout, "configmaps", "jwtauthenticators", "secrets", "webhookauthenticators")
	return e
}

func (e *env) key(kind, name string) authncache.Key {
	return authncache.Key{APIGroup: e.group, Kind: kind, Name: name}
}

func (e *env) createJWT(obj *authv1alpha1.JWTAuthenticator) {
	e.t.Helper()
	if _, err := e.concierge.AuthenticationV1alpha1().JWTAuthenticators().Create(e.ctx, obj, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("creating JWTAuthenticator %s: %v", obj.Name, err)
	}
}

func (e *env) createWebhook(obj *authv1alpha1.WebhookAuthenticator) {
	e.t.Helper()
	if _, err := e.concierge.AuthenticationV1alpha1().WebhookAuthenticators().Create(e.ctx, obj, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("creating WebhookAuthenticator %s: %v", obj.Name, err)
	}
}

// waitForJWT polls the API until the named JWTAuthenticator satisfies done.
func (e *env) waitForJWT(name, what string, done func(*authv1alpha1.JWTAuthenticator) bool) *authv1alpha1.JWTAuthenticator {
	e.t.Helper()
	var last *authv1alpha1.JWTAuthenticator
	eventually(e.t, fmt.Sprintf("JWTAuthenticator %s %s", name, what), func() (bool, string) {
		obj, err := e.concierge.AuthenticationV1alpha1().JWTAuthenticators().Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		last = obj
		return done(obj), describe(obj.Status.Phase, obj.Status.Conditions)
	})
	return last
}

func (e *env) waitForWebhook(name, what string, done func(*authv1alpha1.WebhookAuthenticator) bool) *authv1alpha1.WebhookAuthenticator {
	e.t.Helper()
	var last *authv1alpha1.WebhookAuthenticator
	eventually(e.t, fmt.Sprintf("WebhookAuthenticator %s %s", name, what), func() (bool, string) {
		obj, err := e.concierge.AuthenticationV1alpha1().WebhookAuthenticators().Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		last = obj
		return done(obj), describe(obj.Status.Phase, obj.Status.Conditions)
	})
	return last
}

// statusUpdates counts UpdateStatus calls for resource.
func statusUpdates(f *k8stesting.Fake, resource string) int {
	n := 0
	for _, a := range f.Actions() {
		if a.Matches("update", resource) && a.GetSubresource() == "status" {
			n++
		}
	}
	return n
}

// eventually polls check until it reports done, failing the test with its last state on timeout.
func eventually(t *testing.T, what string, check func() (done bool, state string)) {
	t.Helper()
	var state string
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
		var done bool
		done, state = check()
		return done, nil
	})
	if err != nil {
		t.Fatalf("timed out waiting for %s; last state: %s", what, state)
	}
}

func describe(phase authv1alpha1.Phase, conds []metav1.Condition) string {
	parts := []string{fmt.Sprintf("phase=%q", phase)}
	for _, c := range conds {
		parts = append(parts, fmt.Sprintf("%s=%s/%s(gen %d): %s", c.Type, c.Status, c.Reason, c.ObservedGeneration, c.Message))
	}
	return strings.Join(parts, "; ")
}

func jwtPhase(want authv1alpha1.Phase) func(*authv1alpha1.JWTAuthenticator) bool {
	return func(o *authv1alpha1.JWTAuthenticator) bool { return o.Status.Phase == want }
}

func webhookPhase(want authv1alpha1.Phase) func(*authv1alpha1.WebhookAuthenticator) bool {
	return func(o *authv1alpha1.WebhookAuthenticator) bool { return o.Status.Phase == want }
}

type wantCondition struct {
	status metav1.ConditionStatus
	reason string
}

// allPass is every condition True with reason Success.
func allPass(types []string) map[string]wantCondition {
	want := map[string]wantCondition{}
	for _, typ := range types {
		want[typ] = wantCondition{metav1.ConditionTrue, authv1alpha1.ReasonSuccess}
	}
	return want
}

// failedAt is the steps before failed True, failed False with reason, the later steps Unknown, and
// Ready False.
func failedAt(types []string, failed, reason string) map[string]wantCondition {
	want := map[string]wantCondition{}
	seen := false
	for _, typ := range types {
		switch {
		case typ == authv1alpha1.ConditionReady:
			want[typ] = wantCondition{metav1.ConditionFalse, authv1alpha1.ReasonNotReady}
		case typ == failed:
			want[typ] = wantCondition{metav1.ConditionFalse, reason}
			seen = true
		case failed == authv1alpha1.ConditionTLSConfigurationValid &&
			(typ == authv1alpha1.ConditionIssuerURLValid || typ == authv1alpha1.ConditionEndpointURLValid):
			// The URL is judged on its own, whatever the TLS configuration, as upstream does.
			want[typ] = wantCondition{metav1.ConditionTrue, authv1alpha1.ReasonSuccess}
		case seen:
			want[typ] = wantCondition{metav1.ConditionUnknown, authv1alpha1.ReasonUnableToValidate}
		default:
			want[typ] = wantCondition{metav1.ConditionTrue, authv1alpha1.ReasonSuccess}
		}
	}
	return want
}

func checkConditions(t *testing.T, got []metav1.Condition, generation int64, want map[string]wantCondition) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("got %d conditions; want %d: %s", len(got), len(want), describe("", got))
	}
	for typ, w := range want {
		var c *metav1.Condition
		for i := range got {
			if got[i].Type == typ {
				c = &got[i]
			}
		}
		switch {
		case c == nil:
			t.Errorf("condition %s missing", typ)
		case c.Status != w.status || c.Reason != w.reason:
			t.Errorf("condition %s = %s/%s (%s); want %s/%s", typ, c.Status, c.Reason, c.Message, w.status, w.reason)
		case c.ObservedGeneration != generation:
			t.Errorf("condition %s observedGeneration = %d; want %d", typ, c.ObservedGeneration, generation)
		case c.Message == "" || c.LastTransitionTime.IsZero():
			t.Errorf("condition %s has no message or lastTransitionTime: %+v", typ, *c)
		}
	}
}

func jwtAuthenticator(name, issuer, audience string, tls *authv1alpha1.TLSSpec) *authv1alpha1.JWTAuthenticator {
	return &authv1alpha1.JWTAuthenticator{
		ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1},
		Spec:       authv1alpha1.JWTAuthenticatorSpec{Issuer: issuer, Audience: audience, TLS: tls},
	}
}

func webhookAuthenticator(name, endpoint string, tls *authv1alpha1.TLSSpec) *authv1alpha1.WebhookAuthenticator {
	return &authv1alpha1.WebhookAuthenticator{
		ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1},
		Spec:       authv1alpha1.WebhookAuthenticatorSpec{Endpoint: endpoint, TLS: tls},
	}
}

func inlineCA(pemBytes []byte) *authv1alpha1.TLSSpec {
	return &authv1alpha1.TLSSpec{CertificateAuthorityData: base64.StdEncoding.EncodeToString(pemBytes)}
}

func caFrom(kind authv1alpha1.CertificateAuthorityDataSourceKind, name, key string) *authv1alpha1.TLSSpec {
	return &authv1alpha1.TLSSpec{CertificateAuthorityDataSource: &authv1alpha1.CertificateAuthorityDataSourceSpec{Kind: kind, Name: name, Key: key}}
}

func caSecret(ns, name string, pemBytes []byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{"ca.crt": pemBytes},
	}
}

func caConfigMap(ns, name string, pemBytes []byte) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data:       map[string]string{"ca.crt": string(pemBytes)},
	}
}

// token mints a token from iss for alice with the given audience.
func token(t *testing.T, iss *oidcissuer.Issuer, audience string) string {
	t.Helper()
	tok, err := iss.Issue(map[string]any{"aud": audience, "sub": "alice-sub", "username": "alice", "groups": []string{"devs"}})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// authenticatesAs reports the user the cached authenticator under key makes of tok, "" if none.
func (e *env) authenticatesAs(key authncache.Key, tok string) string {
	e.t.Helper()
	resp, ok, _ := e.cache.AuthenticateToken(context.Background(), key, tok)
	if !ok || resp == nil {
		return ""
	}
	return resp.User.GetName()
}

func TestJWTAuthenticatorOutcome(t *testing.T) {
	const name = "issuer-a"
	tests := []struct {
		name string
		// tls and kubeObjects are built for the running issuer.
		tls         func(iss *oidcissuer.Issuer) *authv1alpha1.TLSSpec
		kubeObjects func(iss *oidcissuer.Issuer) []runtime.Object
		closeIssuer bool
		// failed and reason name the failing step; empty means the authenticator becomes ready.
		failed, reason string
	}{
		{
			name: "inline CA",
			tls:  func(iss *oidcissuer.Issuer) *authv1alpha1.TLSSpec { return inlineCA(iss.CABundle) },
		},
		{
			name: "CA from a Secret",
			tls: func(*oidcissuer.Issuer) *authv1alpha1.TLSSpec {
				return caFrom(authv1alpha1.CertificateAuthorityDataSourceKindSecret, "issuer-ca", "ca.crt")
			},
			kubeObjects: func(iss *oidcissuer.Issuer) []runtime.Object {
				return []runtime.Object{caSecret(namespace, "issuer-ca", iss.CABundle)}
			},
		},
		{
			name: "CA from a ConfigMap",
			tls: func(*oidcissuer.Issuer) *authv1alpha1.TLSSpec {
				return caFrom(authv1alpha1.CertificateAuthorityDataSourceKindConfigMap, "issuer-ca", "ca.crt")
			},
			kubeObjects: func(iss *oidcissuer.Issuer) []runtime.Object {
				return []runtime.Object{caConfigMap(namespace, "issuer-ca", iss.CABundle)}
			},
		},
		{
			name: "missing CA Secret",
			tls: func(*oidcissuer.Issuer) *authv1alpha1.TLSSpec {
				return caFrom(authv1alpha1.CertificateAuthorityDataSourceKindSecret, "issuer-ca", "ca.crt")
			},
			failed: authv1alpha1.ConditionTLSConfigurationValid, reason: authv1alpha1.ReasonInvalidTLSConfig,
		},
		{
			name: "CA Secret only in another namespace",
			tls: func(*oidcissuer.Issuer) *authv1alpha1.TLSSpec {
				return caFrom(authv1alpha1.CertificateAuthorityDataSourceKindSecret, "issuer-ca", "ca.crt")
			},
			kubeObjects: func(iss *oidcissuer.Issuer) []runtime.Object {
				return []runtime.Object{caSecret("elsewhere", "issuer-ca", iss.CABundle)}
			},
			failed: authv1alpha1.ConditionTLSConfigurationValid, reason: authv1alpha1.ReasonInvalidTLSConfig,
		},
		{
			name:   "issuer not trusted by the system roots",
			tls:    func(*oidcissuer.Issuer) *authv1alpha1.TLSSpec { return nil },
			failed: authv1alpha1.ConditionDiscoveryURLValid, reason: authv1alpha1.ReasonInvalidDiscoveryProbe,
		},
		{
			name:        "unreachable issuer",
			tls:         func(iss *oidcissuer.Issuer) *authv1alpha1.TLSSpec { return inlineCA(iss.CABundle) },
			closeIssuer: true,
			failed:      authv1alpha1.ConditionDiscoveryURLValid, reason: authv1alpha1.ReasonInvalidDiscoveryProbe,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			iss := oidcissuer.New(t)
			var kubeObjects []runtime.Object
			if tt.kubeObjects != nil {
				kubeObjects = tt.kubeObjects(iss)
			}
			e := newEnv(t, envOptions{}, kubeObjects...)
			if tt.closeIssuer {
				iss.Close()
			}
			e.createJWT(jwtAuthenticator(name, iss.Issuer, "cluster-a", tt.tls(iss)))

			if tt.failed == "" {
				obj := e.waitForJWT(name, "to be Ready", jwtPhase(authv1alpha1.PhaseReady))
				checkConditions(t, obj.Status.Conditions, 1, allPass(jwtConditionTypes))
				key := e.key("JWTAuthenticator", name)
				if got := e.authenticatesAs(key, token(t, iss, "cluster-a")); got != "alice" {
					t.Errorf("the cached authenticator authenticated the token as %q; want alice", got)
				}
				if got := e.cache.Keys(); !slices.Equal(got, []authncache.Key{key}) {
					t.Errorf("cache keys = %v; want %v", got, key)
				}
				return
			}
			obj := e.waitForJWT(name, "to fail", jwtPhase(authv1alpha1.PhaseError))
			checkConditions(t, obj.Status.Conditions, 1, failedAt(jwtConditionTypes, tt.failed, tt.reason))
			if got := e.cache.Keys(); len(got) != 0 {
				t.Errorf("cache keys = %v; want none for a failing authenticator", got)
			}
		})
	}
}

// A CA source that appears later is picked up through its informer event, not by the retry.
func TestJWTAuthenticatorCASourceCreatedLater(t *testing.T) {
	const name = "issuer-a"
	tests := []struct {
		kind   authv1alpha1.CertificateAuthorityDataSourceKind
		create func(e *env, pemBytes []byte) error
	}{
		{
			kind: authv1alpha1.CertificateAuthorityDataSourceKindSecret,
			create: func(e *env, pemBytes []byte) error {
				_, err := e.kube.CoreV1().Secrets(namespace).Create(e.ctx, caSecret(namespace, "issuer-ca", pemBytes), metav1.CreateOptions{})
				return err
			},
		},
		{
			kind: authv1alpha1.CertificateAuthorityDataSourceKindConfigMap,
			create: func(e *env, pemBytes []byte) error {
				_, err := e.kube.CoreV1().ConfigMaps(namespace).Create(e.ctx, caConfigMap(namespace, "issuer-ca", pemBytes), metav1.CreateOptions{})
				return err
			},
		},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			iss := oidcissuer.New(t)
			e := newEnv(t, envOptions{noRetry: true})
			e.createJWT(jwtAuthenticator(name, iss.Issuer, "cluster-a", caFrom(tt.kind, "issuer-ca", "ca.crt")))

			obj := e.waitForJWT(name, "to fail", jwtPhase(authv1alpha1.PhaseError))
			checkConditions(t, obj.Status.Conditions, 1,
				failedAt(jwtConditionTypes, authv1alpha1.ConditionTLSConfigurationValid, authv1alpha1.ReasonInvalidTLSConfig))
			if got := e.cache.Keys(); len(got) != 0 {
				t.Fatalf("cache keys = %v; want none while the CA is missing", got)
			}

			if err := tt.create(e, iss.CABundle); err != nil {
				t.Fatal(err)
			}
			obj = e.waitForJWT(name, "to become Ready", jwtPhase(authv1alpha1.PhaseReady))
			checkConditions(t, obj.Status.Conditions, 1, allPass(jwtConditionTypes))
			if got := e.authenticatesAs(e.key("JWTAuthenticator", name), token(t, iss, "cluster-a")); got != "alice" {
				t.Errorf("the cached authenticator authenticated the token as %q; want alice", got)
			}
		})
	}
}

func TestJWTAuthenticatorSpecChangeAndDelete(t *testing.T) {
	const name = "issuer-a"
	iss := oidcissuer.New(t)
	e := newEnv(t, envOptions{})
	key := e.key("JWTAuthenticator", name)
	e.createJWT(jwtAuthenticator(name, iss.Issuer, "cluster-a", inlineCA(iss.CABundle)))
	e.waitForJWT(name, "to be Ready", jwtPhase(authv1alpha1.PhaseReady))
	oldValue := e.cache.Get(key)
	tokenA, tokenB := token(t, iss, "cluster-a"), token(t, iss, "cluster-b")
	if got := e.authenticatesAs(key, tokenA); got != "alice" {
		t.Fatalf("before the change, the cluster-a token authenticated as %q; want alice", got)
	}

	obj, err := e.concierge.AuthenticationV1alpha1().JWTAuthenticators().Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	obj.Spec.Audience = "cluster-b"
	obj.Generation = 2 // the fake API does not bump it
	if _, err := e.concierge.AuthenticationV1alpha1().JWTAuthenticators().Update(e.ctx, obj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	obj = e.waitForJWT(name, "to observe generation 2", func(o *authv1alpha1.JWTAuthenticator) bool {
		ready := meta.FindStatusCondition(o.Status.Conditions, authv1alpha1.ConditionReady)
		return o.Status.Phase == authv1alpha1.PhaseReady && ready != nil && ready.ObservedGeneration == 2
	})
	checkConditions(t, obj.Status.Conditions, 2, allPass(jwtConditionTypes))
	if e.cache.Get(key) == oldValue {
		t.Fatal("the authenticator was not replaced after the spec changed")
	}
	if got := e.authenticatesAs(key, tokenA); got != "" {
		t.Errorf("after the change, the cluster-a token authenticated as %q; want it refused", got)
	}
	if got := e.authenticatesAs(key, tokenB); got != "alice" {
		t.Errorf("after the change, the cluster-b token authenticated as %q; want alice", got)
	}

	if err := e.concierge.AuthenticationV1alpha1().JWTAuthenticators().Delete(e.ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deleted authenticator to leave the cache", func() (bool, string) {
		keys := e.cache.Keys()
		return len(keys) == 0, fmt.Sprintf("cache keys %v", keys)
	})
	if got := e.authenticatesAs(key, tokenB); got != "" {
		t.Errorf("after deletion, the token authenticated as %q; want it refused", got)
	}
}

func TestHealthyJWTAuthenticatorIsLeftAloneOnResync(t *testing.T) {
	const name = "issuer-a"
	iss := oidcissuer.New(t)
	e := newEnv(t, envOptions{resync: 50 * time.Millisecond})
	key := e.key("JWTAuthenticator", name)
	e.createJWT(jwtAuthenticator(name, iss.Issuer, "cluster-a", inlineCA(iss.CABundle)))

	// Wait until the informer, which the controller reads, has the Ready status.
	eventually(t, "the informer to see the Ready status", func() (bool, string) {
		obj, err := e.jwtLister.Get(name)
		if err != nil {
			return false, err.Error()
		}
		return obj.Status.Phase == authv1alpha1.PhaseReady, describe(obj.Status.Phase, obj.Status.Conditions)
	})
	// A key is synced by one worker at a time, so once the second sync after now has started,
	// the sync that may have been running now has ended. That one may still have read the status
	// from before Ready (a resync this fast can outrun the informer, and the fake client has no
	// conflicts to refuse the stale write), so writes are counted from there.
	waitSyncs := func(n int64) {
		start := e.jwtSyncs.Load()
		eventually(t, "resyncs", func() (bool, string) {
			got := e.jwtSyncs.Load() - start
			return got >= n, fmt.Sprintf("%d syncs", got)
		})
	}
	waitSyncs(2)
	value, jwksFetches := e.cache.Get(key), iss.JWKSRequests()
	writes := statusUpdates(&e.concierge.Fake, "jwtauthenticators")

	// Once the third sync after now has started, two whole resyncs have run on the unchanged,
	// Ready object.
	waitSyncs(3)
	if n := statusUpdates(&e.concierge.Fake, "jwtauthenticators"); n != writes {
		t.Errorf("status written %d more times on resyncs of a Ready authenticator; want none", n-writes)
	}
	if e.cache.Get(key) != value {
		t.Error("the cached authenticator was replaced although nothing changed")
	}
	if got := iss.JWKSRequests(); got != jwksFetches {
		t.Errorf("the issuer's JWKS was fetched %d more times; want no rebuild", got-jwksFetches)
	}
}

// A status write that fails once must be retried even though the authenticator itself is cached.
func TestJWTAuthenticatorStatusWriteIsRetried(t *testing.T) {
	const name = "issuer-a"
	iss := oidcissuer.New(t)
	var failures atomic.Int32
	e := newEnv(t, envOptions{setup: func(e *env) {
		e.concierge.PrependReactor("update", "jwtauthenticators", func(action k8stesting.Action) (bool, runtime.Object, error) {
			if action.GetSubresource() == "status" && failures.Add(1) == 1 {
				return true, nil, apierrors.NewConflict(authv1alpha1.Resource("jwtauthenticators"), name, fmt.Errorf("the object has been modified"))
			}
			return false, nil, nil
		})
	}})
	e.createJWT(jwtAuthenticator(name, iss.Issuer, "cluster-a", inlineCA(iss.CABundle)))
	obj := e.waitForJWT(name, "to be Ready after a failed status write", jwtPhase(authv1alpha1.PhaseReady))
	checkConditions(t, obj.Status.Conditions, 1, allPass(jwtConditionTypes))
	if n := failures.Load(); n < 2 {
		t.Errorf("status was written %d times; want the failed write and a retry", n)
	}
}

func TestCustomGroupSuffixIsTheCacheKeyGroup(t *testing.T) {
	const group = "authentication.concierge.tuna.io"
	iss := oidcissuer.New(t)
	hook := newTokenReviewServer(t)
	e := newEnv(t, envOptions{group: group})
	e.createJWT(jwtAuthenticator("issuer-a", iss.Issuer, "cluster-a", inlineCA(iss.CABundle)))
	e.createWebhook(webhookAuthenticator("hook-a", hook.URL, inlineCA(hook.caBundle)))
	e.waitForJWT("issuer-a", "to be Ready", jwtPhase(authv1alpha1.PhaseReady))
	e.waitForWebhook("hook-a", "to be Ready", webhookPhase(authv1alpha1.PhaseReady))

	want := []authncache.Key{
		{APIGroup: group, Kind: "JWTAuthenticator", Name: "issuer-a"},
		{APIGroup: group, Kind: "WebhookAuthenticator", Name: "hook-a"},
	}
	if got := e.cache.Keys(); !slices.Equal(got, want) {
		t.Errorf("cache keys = %v; want %v", got, want)
	}
	if got := e.authenticatesAs(want[0], token(t, iss, "cluster-a")); got != "alice" {
		t.Errorf("the JWT token authenticated as %q under the custom group; want alice", got)
	}
	defaultKey := authncache.Key{APIGroup: authv1alpha1.GroupName, Kind: "JWTAuthenticator", Name: "issuer-a"}
	if e.cache.Get(defaultKey) != nil {
		t.Errorf("an authenticator is cached under the default group %s", authv1alpha1.GroupName)
	}
}

func TestWebhookAuthenticatorOutcome(t *testing.T) {
	const name = "hook-a"
	tests := []struct {
		name           string
		tls            func(s *tokenReviewServer) *authv1alpha1.TLSSpec
		kubeObjects    func(s *tokenReviewServer) []runtime.Object
		closeServer    bool
		failed, reason string
	}{
		{
			name: "inline CA",
			tls:  func(s *tokenReviewServer) *authv1alpha1.TLSSpec { return inlineCA(s.caBundle) },
		},
		{
			name: "CA from a Secret",
			tls: func(*tokenReviewServer) *authv1alpha1.TLSSpec {
				return caFrom(authv1alpha1.CertificateAuthorityDataSourceKindSecret, "hook-ca", "ca.crt")
			},
			kubeObjects: func(s *tokenReviewServer) []runtime.Object {
				return []runtime.Object{caSecret(namespace, "hook-ca", s.caBundle)}
			},
		},
		{
			name: "missing CA ConfigMap",
			tls: func(*tokenReviewServer) *authv1alpha1.TLSSpec {
				return caFrom(authv1alpha1.CertificateAuthorityDataSourceKindConfigMap, "hook-ca", "ca.crt")
			},
			failed: authv1alpha1.ConditionTLSConfigurationValid, reason: authv1alpha1.ReasonInvalidTLSConfig,
		},
		{
			name:        "unreachable endpoint",
			tls:         func(s *tokenReviewServer) *authv1alpha1.TLSSpec { return inlineCA(s.caBundle) },
			closeServer: true,
			failed:      authv1alpha1.ConditionWebhookConnectionValid, reason: authv1alpha1.ReasonUnableToDialServer,
		},
		{
			name:   "endpoint not trusted by the system roots",
			tls:    func(*tokenReviewServer) *authv1alpha1.TLSSpec { return nil },
			failed: authv1alpha1.ConditionWebhookConnectionValid, reason: authv1alpha1.ReasonUnableToDialServer,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			server := newTokenReviewServer(t)
			var kubeObjects []runtime.Object
			if tt.kubeObjects != nil {
				kubeObjects = tt.kubeObjects(server)
			}
			e := newEnv(t, envOptions{}, kubeObjects...)
			if tt.closeServer {
				server.Close()
			}
			e.createWebhook(webhookAuthenticator(name, server.URL+"/authenticate", tt.tls(server)))

			if tt.failed == "" {
				obj := e.waitForWebhook(name, "to be Ready", webhookPhase(authv1alpha1.PhaseReady))
				checkConditions(t, obj.Status.Conditions, 1, allPass(webhookConditionTypes))
				key := e.key("WebhookAuthenticator", name)
				if got := e.authenticatesAs(key, "good-token"); got != "alice" {
					t.Errorf("the cached authenticator authenticated good-token as %q; want alice", got)
				}
				if got := e.authenticatesAs(key, "bad-token"); got != "" {
					t.Errorf("the cached authenticator authenticated bad-token as %q; want it refused", got)
				}
				if got := e.cache.Keys(); !slices.Equal(got, []authncache.Key{key}) {
					t.Errorf("cache keys = %v; want %v", got, key)
				}
				return
			}
			obj := e.waitForWebhook(name, "to fail", webhookPhase(authv1alpha1.PhaseError))
			checkConditions(t, obj.Status.Conditions, 1, failedAt(webhookConditionTypes, tt.failed, tt.reason))
			if got := e.cache.Keys(); len(got) != 0 {
				t.Errorf("cache keys = %v; want none for a failing authenticator", got)
			}
		})
	}
}

// tokenReviewServer is a TokenReview webhook: "good-token" is alice, anything else is refused.
type tokenReviewServer struct {
	*httptest.Server
	caBundle []byte
}

func newTokenReviewServer(t *testing.T) *tokenReviewServer {
	s := &tokenReviewServer{Server: httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// v1 and v1beta1 TokenReviews share the JSON shape of the fields used here.
		var review authenticationv1.TokenReview
		if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&review) != nil {
			http.Error(w, "want a POSTed TokenReview", http.StatusBadRequest)
			return
		}
		review.Status = authenticationv1.TokenReviewStatus{}
		if review.Spec.Token == "good-token" {
			review.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: "alice"}}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(review)
	}))}
	t.Cleanup(s.Close)
	s.caBundle = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	return s
}
