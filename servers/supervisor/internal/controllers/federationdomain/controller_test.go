package federationdomain

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	configv1alpha1 "sealion.dev/core/apis/supervisor/config/v1alpha1"
	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	"sealion.dev/core/certauthority"
	supervisorfake "sealion.dev/core/generated/supervisor/clientset/versioned/fake"
	supervisorinformers "sealion.dev/core/generated/supervisor/informers/externalversions"
	"sealion.dev/core/testing/fakewatch"
	"sealion.dev/servers/supervisor/internal/connectors/kinds"
	"sealion.dev/servers/supervisor/internal/issuer"
	"sealion.dev/servers/supervisor/internal/signingkeys"
)

const (
	namespace     = "supervisor"
	defaultSecret = "default-tls"
)

// recorder keeps what the controller last published.
type recorder struct {
	mu      sync.Mutex
	issuers []*issuer.Issuer
	byHost  map[string]*tls.Certificate
	def     *tls.Certificate
}

func (r *recorder) Set(issuers []*issuer.Issuer) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.issuers = issuers
	return nil
}

type certRecorder struct{ *recorder }

func (r certRecorder) Set(byHost map[string]*tls.Certificate, def *tls.Certificate) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byHost, r.def = byHost, def
}

type env struct {
	t          *testing.T
	ctx        context.Context
	kube       *kubefake.Clientset
	supervisor *supervisorfake.Clientset
	c          *Controller
	published  *recorder
}

// newEnv builds the controller on fake clients holding objects, with started and synced informers.
func newEnv(t *testing.T, kubeObjects []runtime.Object, supervisorObjects ...runtime.Object) *env {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	e := &env{
		t: t, ctx: ctx,
		kube:       kubefake.NewClientset(kubeObjects...),
		supervisor: supervisorfake.NewSimpleClientset(supervisorObjects...),
		published:  &recorder{},
	}
	watches := fakewatch.Record(e.kube, e.supervisor)
	kubeFactory := kubeinformers.NewSharedInformerFactoryWithOptions(e.kube, 0, kubeinformers.WithNamespace(namespace))
	crFactory := supervisorinformers.NewSharedInformerFactoryWithOptions(e.supervisor, 0, supervisorinformers.WithNamespace(namespace))
	c, err := New(Config{
		Namespace: namespace, APIGroupSuffix: "tuna.io", DefaultTLSCertificateSecret: defaultSecret, Labels: map[string]string{"app": "supervisor"},
		DeploymentName: "pinniped-supervisor",
	}, e.supervisor, e.kube, kinds.All, Informers{
		FederationDomains: crFactory.Config().V1alpha1().FederationDomains(),
		IDPs:              crFactory.Idp().V1alpha1(),
		Secrets:           kubeFactory.Core().V1().Secrets(),
	}, e.published, certRecorder{e.published})
	if err != nil {
		t.Fatal(err)
	}
	e.c = c
	kubeFactory.Start(ctx.Done())
	crFactory.Start(ctx.Done())
	t.Cleanup(func() {
		cancel()
		kubeFactory.Shutdown()
		crFactory.Shutdown()
	})
	for _, synced := range []map[reflect.Type]bool{kubeFactory.WaitForCacheSync(ctx.Done()), crFactory.WaitForCacheSync(ctx.Done())} {
		for typ, ok := range synced {
			if !ok {
				t.Fatalf("the %v informer did not sync", typ)
			}
		}
	}
	resources := []string{"secrets", "federationdomains"}
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

// sync runs one sync and fails the test on error.
func (e *env) sync() {
	e.t.Helper()
	if err := e.c.sync(e.ctx); err != nil {
		e.t.Fatalf("sync: %v", err)
	}
}

// waitForSecret waits until the controller's cache holds the Secret in the state cond accepts.
func (e *env) waitForSecret(name string, cond func(*corev1.Secret) bool) {
	e.t.Helper()
	if !waitFor(e.ctx, func() bool {
		s, err := e.c.secrets.Get(name)
		return err == nil && cond(s)
	}) {
		e.t.Fatalf("the cache never showed the expected Secret %s", name)
	}
}

// waitForCacheToCatchUp waits until the controller's caches hold every Secret and FederationDomain
// exactly as the API does. Waiting for one object is not enough: the informers deliver each
// object's events independently, so another one written in the same sync may still be stale.
func (e *env) waitForCacheToCatchUp() {
	e.t.Helper()
	if !waitFor(e.ctx, func() bool {
		secrets, err := e.kube.CoreV1().Secrets(namespace).List(e.ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for i := range secrets.Items {
			cached, err := e.c.secrets.Get(secrets.Items[i].Name)
			if err != nil || !apiequality.Semantic.DeepEqual(cached, &secrets.Items[i]) {
				return false
			}
		}
		fds, err := e.supervisor.ConfigV1alpha1().FederationDomains(namespace).List(e.ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for i := range fds.Items {
			cached, err := e.c.federationDomains.Get(fds.Items[i].Name)
			if err != nil || !apiequality.Semantic.DeepEqual(cached, &fds.Items[i]) {
				return false
			}
		}
		return true
	}) {
		e.t.Fatal("the controller's cache never caught up with the API")
	}
}

func (e *env) secret(name string) *corev1.Secret {
	e.t.Helper()
	s, err := e.kube.CoreV1().Secrets(namespace).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

func (e *env) federationDomain(name string) *configv1alpha1.FederationDomain {
	e.t.Helper()
	f, err := e.supervisor.ConfigV1alpha1().FederationDomains(namespace).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return f
}

func (e *env) issuers() map[string]*issuer.Issuer {
	e.published.mu.Lock()
	defer e.published.mu.Unlock()
	out := map[string]*issuer.Issuer{}
	for _, iss := range e.published.issuers {
		out[iss.Name] = iss
	}
	return out
}

func tlsSecret(t *testing.T, name string, hosts ...string) *corev1.Secret {
	t.Helper()
	ca, err := certauthority.New("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := ca.IssueServingCert(hosts[0], hosts, nil, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM},
	}
}

func ldapIDP() *idpv1alpha1.LDAPIdentityProvider {
	return &idpv1alpha1.LDAPIdentityProvider{ObjectMeta: metav1.ObjectMeta{Name: "ldap", Namespace: namespace, UID: "ldap-uid"}}
}

func leafDNSNames(t *testing.T, c *tls.Certificate) []string {
	t.Helper()
	if c == nil {
		return nil
	}
	leaf, err := x509.ParseCertificate(c.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf.DNSNames
}

// The Supervisor-wide CSRF cookie key has upstream's Secret: named after the Deployment, which
// owns it without controlling it, with upstream's type, data key and the configured labels.
func TestSyncGeneratesTheCSRFKey(t *testing.T) {
	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "pinniped-supervisor", Namespace: namespace, UID: "deployment-uid"}}
	e := newEnv(t, []runtime.Object{deployment, tlsSecret(t, defaultSecret, "default.example.com")}, fd("fd", "https://issuer.example.com/a"), ldapIDP())
	e.sync()
	s := e.secret("pinniped-supervisor-key")
	wantRef := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "pinniped-supervisor", UID: "deployment-uid", Controller: ptr.To(false)}
	if diff := cmp.Diff([]metav1.OwnerReference{wantRef}, s.OwnerReferences); diff != "" {
		t.Errorf("owner references (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"app": "supervisor"}, s.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if s.Type != "secrets.pinniped.dev/supervisor-csrf-signing-key" || len(s.Data) != 1 || len(s.Data["key"]) != 32 {
		t.Errorf("type %q, data keys %v; want upstream's type and a 32-byte key", s.Type, slices.Sorted(maps.Keys(s.Data)))
	}

	// Every issuer signs CSRF cookies with that one key.
	e.waitForSecret("pinniped-supervisor-key", func(*corev1.Secret) bool { return true })
	e.sync()
	if iss := e.issuers()["fd"]; iss == nil || string(iss.CSRFKey) != string(s.Data["key"]) {
		t.Errorf("published issuer %+v, want the stored CSRF key", iss)
	}

	// A Supervisor run outside a Deployment keeps the key in a Secret without an owner.
	e = newEnv(t, []runtime.Object{tlsSecret(t, defaultSecret, "default.example.com")}, fd("fd", "https://issuer.example.com/a"))
	e.sync()
	if s := e.secret("pinniped-supervisor-key"); len(s.OwnerReferences) != 0 || len(s.Data["key"]) != 32 {
		t.Errorf("without a Deployment: owners %v, %d key bytes", s.OwnerReferences, len(s.Data["key"]))
	}
}

func TestSyncGeneratesKeysAndPublishes(t *testing.T) {
	valid := withTLS(fd("valid", "https://Issuer.Example.com/a"), "issuer-tls")
	invalid := fd("invalid", "https://issuer.example.com/b?query")
	e := newEnv(t,
		[]runtime.Object{tlsSecret(t, "issuer-tls", "issuer.example.com"), tlsSecret(t, defaultSecret, "default.example.com")},
		valid, invalid, ldapIDP())
	e.sync()

	// Every FederationDomain gets its keys, owned by it, valid or not.
	for _, f := range []*configv1alpha1.FederationDomain{valid, invalid} {
		stored := e.federationDomain(f.Name)
		names := stored.Status.Secrets
		want := configv1alpha1.FederationDomainSecrets{
			JWKS:               corev1.LocalObjectReference{Name: f.Name + "-jwks"},
			TokenSigningKey:    corev1.LocalObjectReference{Name: "pinniped-oidc-provider-hmac-key-" + string(f.UID)},
			StateSigningKey:    corev1.LocalObjectReference{Name: "pinniped-oidc-provider-upstream-state-signature-key-" + string(f.UID)},
			StateEncryptionKey: corev1.LocalObjectReference{Name: "pinniped-oidc-provider-upstream-state-encryption-key-" + string(f.UID)},
		}
		if diff := cmp.Diff(want, names); diff != "" {
			t.Errorf("%s: status.secrets (-want +got):\n%s", f.Name, diff)
		}
		// Upstream's types and data keys; labels are exactly the configured ones; the owner is
		// the FederationDomain as controller, blocking its deletion.
		for name, want := range map[string]struct {
			typ  corev1.SecretType
			data []string
		}{
			names.JWKS.Name:               {"secrets.pinniped.dev/federation-domain-jwks", []string{"activeJWK", "jwks"}},
			names.TokenSigningKey.Name:    {"secrets.pinniped.dev/federation-domain-token-signing-key", []string{"key"}},
			names.StateSigningKey.Name:    {"secrets.pinniped.dev/federation-domain-state-signing-key", []string{"key"}},
			names.StateEncryptionKey.Name: {"secrets.pinniped.dev/federation-domain-state-encryption-key", []string{"key"}},
		} {
			s := e.secret(name)
			wantRef := metav1.OwnerReference{APIVersion: "config.supervisor.tuna.io/v1alpha1", Kind: "FederationDomain", Name: f.Name, UID: f.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
			if diff := cmp.Diff([]metav1.OwnerReference{wantRef}, s.OwnerReferences); diff != "" {
				t.Errorf("%s: owner references (-want +got):\n%s", name, diff)
			}
			if diff := cmp.Diff(map[string]string{"app": "supervisor"}, s.Labels); diff != "" {
				t.Errorf("%s: labels (-want +got):\n%s", name, diff)
			}
			// Only the JWKS Secret carries an annotation of ours, when its key was generated.
			if name == names.JWKS.Name {
				delete(s.Annotations, signingkeys.GeneratedAtAnnotation)
			}
			if s.Type != want.typ || !slices.Equal(slices.Sorted(maps.Keys(s.Data)), want.data) || len(s.Annotations) != 0 {
				t.Errorf("%s: type %q, data keys %v, annotations %v; want type %q, data keys %v", name, s.Type, slices.Sorted(maps.Keys(s.Data)), s.Annotations, want.typ, want.data)
			}
		}
	}

	// Statuses.
	if got := e.federationDomain("valid").Status; got.Phase != configv1alpha1.PhaseReady {
		t.Errorf("valid FederationDomain: phase %s, conditions %+v", got.Phase, got.Conditions)
	}
	invalidStatus := e.federationDomain("invalid").Status
	if invalidStatus.Phase != configv1alpha1.PhaseError || conds(invalidStatus.Conditions)[issuerURLValid] != "False/InvalidIssuerURL" {
		t.Errorf("invalid FederationDomain: phase %s, conditions %v", invalidStatus.Phase, conds(invalidStatus.Conditions))
	}
	for _, c := range invalidStatus.Conditions {
		if c.ObservedGeneration != 1 || c.LastTransitionTime.IsZero() {
			t.Errorf("condition %s: observedGeneration %d, lastTransitionTime %v", c.Type, c.ObservedGeneration, c.LastTransitionTime)
		}
	}

	// Only the valid one is served, with its keys and identity provider.
	issuers := e.issuers()
	if len(issuers) != 1 || issuers["valid"] == nil {
		t.Fatalf("published issuers %v", issuers)
	}
	iss := issuers["valid"]
	stored, err := signingkeys.ParseJWKS(e.secret("valid-jwks").Data)
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(iss.JWKS.Public.Keys[0].Key, stored.Public.Keys[0].Key) || len(iss.TokenSigningKey) != 32 ||
		len(iss.StateSigningKey) != 32 || len(iss.StateEncryptionKey) != 32 {
		t.Errorf("published keys differ from the stored ones: %+v", iss)
	}
	if diff := cmp.Diff([]string{"ldap"}, displayNamesOf(iss.IdentityProviders)); diff != "" {
		t.Errorf("identity providers (-want +got):\n%s", diff)
	}

	// TLS: the issuer's hostname has its certificate, and the default is the default.
	e.published.mu.Lock()
	byHost, def := e.published.byHost, e.published.def
	e.published.mu.Unlock()
	if len(byHost) != 1 || !cmp.Equal(leafDNSNames(t, byHost["issuer.example.com"]), []string{"issuer.example.com"}) {
		t.Errorf("certificates by host: %v", byHost)
	}
	if !cmp.Equal(leafDNSNames(t, def), []string{"default.example.com"}) {
		t.Errorf("default certificate for %v", leafDNSNames(t, def))
	}

	// A second sync with an up-to-date cache changes nothing.
	e.waitForCacheToCatchUp()
	before := len(e.kube.Actions()) + len(e.supervisor.Actions())
	e.sync()
	if after := len(e.kube.Actions()) + len(e.supervisor.Actions()); after != before {
		t.Errorf("an idle sync made %d API calls", after-before)
	}
}

func TestDeletedOrBrokenKeysAreReplaced(t *testing.T) {
	f := fd("fd", "https://issuer.example.com")
	e := newEnv(t, nil, f, ldapIDP())
	e.sync()
	first := e.issuers()["fd"].JWKS.Public.Keys[0]
	e.waitForSecret("fd-jwks", func(*corev1.Secret) bool { return true })

	// Deleting the JWKS Secret rotates the key.
	if err := e.kube.CoreV1().Secrets(namespace).Delete(e.ctx, "fd-jwks", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if !waitFor(e.ctx, func() bool { _, err := e.c.secrets.Get("fd-jwks"); return apierrors.IsNotFound(err) }) {
		t.Fatal("the cache never lost the deleted Secret")
	}
	e.sync()
	second := e.issuers()["fd"].JWKS.Public.Keys[0]
	if cmp.Equal(first.Key, second.Key) {
		t.Error("the key was not rotated")
	}
	if _, err := signingkeys.ParseJWKS(e.secret("fd-jwks").Data); err != nil {
		t.Errorf("the new Secret is unusable: %v", err)
	}

	// A broken symmetric key is replaced in place.
	hmacName := signingkeys.TokenSigningKey.SecretName(string(f.UID))
	broken := e.secret(hmacName)
	broken.Data = map[string][]byte{"key": []byte("short")}
	if _, err := e.kube.CoreV1().Secrets(namespace).Update(e.ctx, broken, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitForSecret(hmacName, func(s *corev1.Secret) bool { return string(s.Data["key"]) == "short" })
	e.sync()
	if key := e.secret(hmacName).Data["key"]; len(key) != 32 {
		t.Errorf("the broken key was not replaced: %q", key)
	}

	// A key Secret owned by a former FederationDomain of the same name is taken over with a new key.
	e.waitForSecret("fd-jwks", func(*corev1.Secret) bool { return true })
	stale := e.secret("fd-jwks")
	stale.OwnerReferences[0].UID = "an-older-federation-domain"
	if _, err := e.kube.CoreV1().Secrets(namespace).Update(e.ctx, stale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitForSecret("fd-jwks", func(s *corev1.Secret) bool { return s.OwnerReferences[0].UID == "an-older-federation-domain" })
	e.sync()
	if refs := e.secret("fd-jwks").OwnerReferences; len(refs) != 1 || refs[0].UID != f.UID {
		t.Errorf("owner references %+v", refs)
	}
	if cmp.Equal(second.Key, e.issuers()["fd"].JWKS.Public.Keys[0].Key) {
		t.Error("a key of another FederationDomain was reused")
	}
}

func TestForeignSecretIsNeverOverwritten(t *testing.T) {
	foreign := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "fd-jwks", Namespace: namespace},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{"mine": []byte("do not touch")},
	}
	e := newEnv(t, []runtime.Object{foreign}, fd("fd", "https://issuer.example.com"))
	err := e.c.sync(e.ctx)
	if err == nil || !strings.Contains(err.Error(), `the Secret fd-jwks exists with type "Opaque"`) {
		t.Fatalf("sync error %v", err)
	}
	if got := e.secret("fd-jwks"); string(got.Data["mine"]) != "do not touch" {
		t.Errorf("the user's Secret was changed: %+v", got)
	}
	// Without keys, the issuer is not served; its status is still written.
	if len(e.issuers()) != 0 {
		t.Errorf("published %v", e.issuers())
	}
	if got := conds(e.federationDomain("fd").Status.Conditions); got[issuerURLValid] != "True/Success" || got[idpsFound] != "False/LegacyConfigurationIdentityProviderNotFound" {
		t.Errorf("conditions %v", got)
	}
}

// TestEveryKindIsListed resolves references to an object of every kind, read through the
// kind's informer and described by the kind.
func TestEveryKindIsListed(t *testing.T) {
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: namespace, UID: types.UID(name + "-uid")}
	}
	f := fd("fd", "https://issuer.example.com",
		ref("AD", "ActiveDirectoryIdentityProvider", "ad"), ref("GitHub", "GitHubIdentityProvider", "github"),
		ref("LDAP", "LDAPIdentityProvider", "ldap"), ref("OIDC", "OIDCIdentityProvider", "oidc"))
	e := newEnv(t, nil, f,
		&idpv1alpha1.ActiveDirectoryIdentityProvider{ObjectMeta: meta("ad")},
		&idpv1alpha1.GitHubIdentityProvider{ObjectMeta: meta("github")},
		ldapIDP(),
		&idpv1alpha1.OIDCIdentityProvider{ObjectMeta: meta("oidc")})
	e.sync()
	iss := e.issuers()["fd"]
	if iss == nil {
		t.Fatalf("not served; conditions %v", conds(e.federationDomain("fd").Status.Conditions))
	}
	var got []string
	for _, idp := range iss.IdentityProviders {
		got = append(got, fmt.Sprintf("%s %s %s/%s %s", idp.DisplayName, idp.Type, idp.Kind, idp.Name, idp.UID))
	}
	want := []string{
		fmt.Sprintf("AD %s ActiveDirectoryIdentityProvider/ad ad-uid", issuer.TypeActiveDirectory),
		fmt.Sprintf("GitHub %s GitHubIdentityProvider/github github-uid", issuer.TypeGitHub),
		fmt.Sprintf("LDAP %s LDAPIdentityProvider/ldap ldap-uid", issuer.TypeLDAP),
		fmt.Sprintf("OIDC %s OIDCIdentityProvider/oidc oidc-uid", issuer.TypeOIDC),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("identity providers (-want +got):\n%s", diff)
	}
}

func TestNoDefaultCertificate(t *testing.T) {
	e := newEnv(t, nil)
	e.sync()
	e.published.mu.Lock()
	defer e.published.mu.Unlock()
	if e.published.def != nil || len(e.published.byHost) != 0 || len(e.published.issuers) != 0 {
		t.Errorf("published %+v", e.published)
	}
}

func TestRunSyncsOnEvents(t *testing.T) {
	e := newEnv(t, nil)
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.c.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	// Each informer's event leads to a sync of the whole set: a new FederationDomain shows its
	// missing identity provider in its status, and is served with it once it is added.
	if _, err := e.supervisor.ConfigV1alpha1().FederationDomains(namespace).Create(e.ctx, fd("fd", "https://issuer.example.com"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if !waitFor(e.ctx, func() bool { return e.federationDomain("fd").Status.Phase == configv1alpha1.PhaseError }) {
		t.Fatal("the new FederationDomain never got a status")
	}
	if _, err := e.supervisor.IdpV1alpha1().LDAPIdentityProviders(namespace).Create(e.ctx, ldapIDP(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if !waitFor(e.ctx, func() bool {
		iss := e.issuers()["fd"]
		return iss != nil && len(iss.IdentityProviders) == 1
	}) {
		t.Fatal("the new identity provider was never served")
	}
}

func TestNewRejectsAnInvalidSuffix(t *testing.T) {
	if _, err := New(Config{APIGroupSuffix: "nodot"}, nil, nil, nil, Informers{}, nil, nil); err == nil {
		t.Error("accepted")
	}
}

// TestStoredConditions: the status holds every condition sorted by type, with the current
// generation; a condition of a type no longer reported stays, and an unchanged one keeps its
// transition time, as upstream Pinniped merges them.
func TestStoredConditions(t *testing.T) {
	earlier := metav1.NewTime(time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC))
	f := fd("fd", "https://issuer.example.com")
	f.Generation = 7
	f.Status.Conditions = []metav1.Condition{
		{Type: "ZOld", Status: metav1.ConditionFalse, Reason: "Gone", Message: "from an older version", LastTransitionTime: earlier, ObservedGeneration: 1},
		{Type: issuerURLValid, Status: metav1.ConditionTrue, Reason: "Success", Message: "spec.issuer is a valid URL", LastTransitionTime: earlier, ObservedGeneration: 6},
		{Type: "AOld", Status: metav1.ConditionTrue, Reason: "Success", Message: "from an older version", LastTransitionTime: earlier, ObservedGeneration: 1},
	}
	e := newEnv(t, nil, f)
	e.sync()
	got := e.federationDomain("fd").Status
	var types []string
	for _, c := range got.Conditions {
		types = append(types, c.Type)
		if c.Type == "AOld" || c.Type == "ZOld" {
			if c.ObservedGeneration != 1 {
				t.Errorf("%s: observedGeneration %d", c.Type, c.ObservedGeneration)
			}
			continue
		}
		if c.ObservedGeneration != 7 {
			t.Errorf("%s: observedGeneration %d", c.Type, c.ObservedGeneration)
		}
		if c.Type == issuerURLValid && !c.LastTransitionTime.Equal(&earlier) {
			t.Errorf("%s: lastTransitionTime %v", c.Type, c.LastTransitionTime)
		}
	}
	want := []string{"AOld", displayNames, idpsFound, apiGroupValid, kindValid, issuerIsUnique, issuerURLValid, oneTLSSecret, ready, examplesPassed, expressionsValid, "ZOld"}
	if diff := cmp.Diff(want, types); diff != "" {
		t.Errorf("condition types (-want +got):\n%s", diff)
	}
	if got.Phase != configv1alpha1.PhaseError {
		t.Errorf("phase %s", got.Phase)
	}
}

// As Pinniped, a FederationDomain with any false condition is not served at all: one whose
// identity provider does not exist yet answers 404 until the identity provider appears.
func TestOnlyReadyFederationDomainsAreServed(t *testing.T) {
	e := newEnv(t, []runtime.Object{tlsSecret(t, defaultSecret, "default.example.com")}, fd("fd", "https://issuer.example.com/a"))
	e.sync()
	if got := e.federationDomain("fd").Status; got.Phase != configv1alpha1.PhaseError || conds(got.Conditions)["IdentityProvidersFound"] != "False/LegacyConfigurationIdentityProviderNotFound" {
		t.Fatalf("phase %s, conditions %v", got.Phase, conds(got.Conditions))
	}
	if issuers := e.issuers(); len(issuers) != 0 {
		t.Errorf("published %v, want nothing while an identity provider is missing", issuers)
	}

	if _, err := e.supervisor.IdpV1alpha1().LDAPIdentityProviders(namespace).Create(e.ctx, ldapIDP(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if !waitFor(e.ctx, func() bool { inv, err := list(e.c.idps); return err == nil && len(inv["LDAPIdentityProvider"]) == 1 }) {
		t.Fatal("the cache never showed the identity provider")
	}
	e.sync()
	if e.issuers()["fd"] == nil || e.federationDomain("fd").Status.Phase != configv1alpha1.PhaseReady {
		t.Errorf("published %v with phase %s, want the FederationDomain served once Ready", e.issuers(), e.federationDomain("fd").Status.Phase)
	}
}
