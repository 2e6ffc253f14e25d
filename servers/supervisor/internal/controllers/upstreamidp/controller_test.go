package upstreamidp

import (
	"context"
	"encoding/base64"
	"errors"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	supervisorfake "sealion.dev/core/generated/supervisor/clientset/versioned/fake"
	supervisorinformers "sealion.dev/core/generated/supervisor/informers/externalversions"
	"sealion.dev/core/testing/oidcissuer"
	"sealion.dev/servers/supervisor/internal/issuer"
	"sealion.dev/servers/supervisor/internal/upstreamad"
	"sealion.dev/servers/supervisor/internal/upstreamgithub"
	"sealion.dev/servers/supervisor/internal/upstreamldap"
	"sealion.dev/servers/supervisor/internal/upstreams"
)

const namespace = "supervisor"

type env struct {
	t          *testing.T
	ctx        context.Context
	cancel     context.CancelFunc
	kube       *kubefake.Clientset
	supervisor *supervisorfake.Clientset
	registry   *upstreams.Registry
	c          *Controller
	now        time.Time

	mu     sync.Mutex
	probed map[string]int // probes made, by kind
}

// newEnv builds the controller on fake clients holding objects, with synced informers and
// in-process probes: LDAP and GitHub hosts named "good..." answer, others fail.
func newEnv(t *testing.T, kubeObjects []runtime.Object, supervisorObjects ...runtime.Object) *env {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	e := &env{
		t: t, ctx: ctx, cancel: cancel,
		kube:       kubefake.NewClientset(kubeObjects...),
		supervisor: supervisorfake.NewSimpleClientset(supervisorObjects...),
		registry:   &upstreams.Registry{},
		now:        time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		probed:     map[string]int{},
	}
	kubeFactory := kubeinformers.NewSharedInformerFactoryWithOptions(e.kube, 0, kubeinformers.WithNamespace(namespace))
	crFactory := supervisorinformers.NewSharedInformerFactoryWithOptions(e.supervisor, 0, supervisorinformers.WithNamespace(namespace))
	idps := crFactory.Idp().V1alpha1()
	e.c = New(namespace, e.supervisor, Informers{
		OIDC: idps.OIDCIdentityProviders(), LDAP: idps.LDAPIdentityProviders(),
		ActiveDirectory: idps.ActiveDirectoryIdentityProviders(), GitHub: idps.GitHubIdentityProviders(),
		Secrets: kubeFactory.Core().V1().Secrets(), ConfigMaps: kubeFactory.Core().V1().ConfigMaps(),
	}, e.registry)
	e.c.now = func() time.Time { return e.now }
	e.c.probes = probes{
		oidc: func(ctx context.Context, iss string, client *http.Client) error {
			e.count("oidc")
			return discover(ctx, iss, client)
		},
		ldap: func(_ context.Context, p *upstreamldap.Provider) (upstreamldap.Protocol, error) {
			e.count("ldap")
			return goodHost(p.Config().Host, upstreamldap.LDAPS)
		},
		activeDirectory: func(_ context.Context, cfg upstreamldap.Config, gen int64) (*upstreamldap.Provider, []metav1.Condition) {
			e.count("activedirectory")
			if _, err := goodHost(cfg.Host, ""); err != nil {
				return nil, []metav1.Condition{
					{Type: idpv1alpha1.ConditionSearchBaseFound, Status: metav1.ConditionFalse, Reason: idpv1alpha1.ReasonErrorFetchingSearchBase, Message: err.Error(), ObservedGeneration: gen},
					{Type: idpv1alpha1.ConditionLDAPConnectionValid, Status: metav1.ConditionUnknown, Reason: idpv1alpha1.ReasonUnableToValidate, ObservedGeneration: gen},
				}
			}
			cfg.UserSearch.Base, cfg.GroupSearch.Base = "dc=example", "dc=example" // as if read from the rootDSE
			p, err := upstreamad.New(cfg)
			if err != nil {
				t.Errorf("upstreamad.New: %v", err)
				return nil, nil
			}
			return p, []metav1.Condition{
				{Type: idpv1alpha1.ConditionSearchBaseFound, Status: metav1.ConditionTrue, Reason: idpv1alpha1.ReasonUsingConfigurationFromSpec, ObservedGeneration: gen},
				{Type: idpv1alpha1.ConditionLDAPConnectionValid, Status: metav1.ConditionTrue, Reason: idpv1alpha1.ReasonSuccess, ObservedGeneration: gen},
			}
		},
		github: func(_ context.Context, address string, _ []byte) error {
			e.count("github")
			_, err := goodHost(address, "")
			return err
		},
	}
	kubeFactory.Start(ctx.Done())
	crFactory.Start(ctx.Done())
	t.Cleanup(func() {
		cancel()
		kubeFactory.Shutdown()
		crFactory.Shutdown()
	})
	for _, synced := range e.c.synced {
		if !waitFor(ctx, synced) {
			t.Fatal("informers did not sync")
		}
	}
	return e
}

func goodHost(host string, p upstreamldap.Protocol) (upstreamldap.Protocol, error) {
	if len(host) >= 4 && host[:4] == "good" {
		return p, nil
	}
	return "", errors.New("connection refused")
}

func (e *env) count(kind string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.probed[kind]++
}

func (e *env) probes(kind string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.probed[kind]
}

func waitFor(ctx context.Context, cond func() bool) bool {
	return wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	}) == nil
}

// sync runs one sync of every kind and fails the test on error.
func (e *env) sync() {
	e.t.Helper()
	for _, l := range e.c.loops {
		if err := l.sync(e.ctx); err != nil {
			e.t.Fatalf("sync of %s: %v", l.kind, err)
		}
	}
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
			secret("client", OIDCClientSecretType, map[string]string{"clientID": "supervisor", "clientSecret": "shh"}),
			secret("wrong-type", corev1.SecretTypeOpaque, map[string]string{"clientID": "supervisor", "clientSecret": "shh"}),
			secret("no-secret-key", OIDCClientSecretType, map[string]string{"clientID": "supervisor"}),
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
		{"issuer-mismatch", idpv1alpha1.PhaseError, []summary{false_(disc, idpv1alpha1.ReasonInvalidResponse)}},
		{"bad-ca", idpv1alpha1.PhaseError, []summary{
			false_(tls, idpv1alpha1.ReasonInvalidTLSConfig),
			{disc, string(metav1.ConditionUnknown), idpv1alpha1.ReasonUnableToValidate},
		}},
		{"http-issuer", idpv1alpha1.PhaseError, []summary{false_(disc, idpv1alpha1.ReasonInvalid)}},
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
		_, inRegistry := e.registry.OIDC(namespace, tt.name)
		if wantIn := tt.phase == idpv1alpha1.PhaseReady; inRegistry != wantIn {
			t.Errorf("%s: in the registry: %v, want %v", tt.name, inRegistry, wantIn)
		}
	}

	up, _ := e.registry.OIDC(namespace, "ready")
	if up == nil {
		t.Fatal("the ready OIDCIdentityProvider is not in the registry")
	}
	if up.IssuerURL != good.Issuer || up.ClientID != "supervisor" || up.ClientSecret != "shh" ||
		up.UsernameClaim != "email" || up.GroupsClaim != "groups" || up.HTTPClient == nil {
		t.Errorf("registered upstream = %+v", up)
	}
	if want := []string{"email", "groups"}; len(up.Scopes) != 2 || up.Scopes[0] != want[0] || up.Scopes[1] != want[1] {
		t.Errorf("scopes = %q, want %q (openid is always sent, not listed)", up.Scopes, want)
	}
	// The registered client trusts the spec's CA: it reaches the issuer.
	resp, err := up.HTTPClient.Get(good.DiscoveryURL())
	if err != nil {
		t.Fatalf("the registered HTTP client cannot reach the issuer: %v", err)
	}
	_ = resp.Body.Close()
}

func TestOIDCProbesAndWritesOnlyOnChange(t *testing.T) {
	iss := oidcissuer.New(t)
	idp := &idpv1alpha1.OIDCIdentityProvider{ObjectMeta: objectMeta("upstream"), Spec: idpv1alpha1.OIDCIdentityProviderSpec{
		Issuer: iss.Issuer, Client: idpv1alpha1.OIDCClientCredentials{SecretName: "client"},
		TLS: &idpv1alpha1.TLSSpec{CertificateAuthorityData: base64.StdEncoding.EncodeToString(iss.CABundle)},
	}}
	e := newEnv(t, []runtime.Object{secret("client", OIDCClientSecretType, map[string]string{"clientID": "a", "clientSecret": "b"})}, idp)
	e.sync()
	if e.probes("oidc") != 1 || e.statusUpdates() != 1 {
		t.Fatalf("first sync: %d probes, %d status updates; want 1 and 1", e.probes("oidc"), e.statusUpdates())
	}
	first, _ := e.registry.OIDC(namespace, "upstream")
	e.waitForCache("the status update", func() bool {
		got, err := e.c.oidc.Get("upstream")
		return err == nil && got.Status.Phase == idpv1alpha1.PhaseReady
	})

	e.sync()
	if e.probes("oidc") != 1 || e.statusUpdates() != 1 {
		t.Errorf("resync without changes: %d probes, %d status updates; want still 1 and 1", e.probes("oidc"), e.statusUpdates())
	}

	e.now = e.now.Add(probeTTL)
	e.sync()
	if e.probes("oidc") != 2 {
		t.Errorf("after probeTTL: %d probes, want 2", e.probes("oidc"))
	}
	second, _ := e.registry.OIDC(namespace, "upstream")
	if first.HTTPClient != second.HTTPClient {
		t.Error("the HTTP client changed although the CA bundle did not: the endpoints would discover the issuer again")
	}
	if e.statusUpdates() != 1 {
		t.Errorf("a repeated successful probe wrote the status again (%d updates)", e.statusUpdates())
	}

	// A spec change that keeps the issuer and CA bundle keeps the discovery and the client.
	changed, err := e.c.oidc.Get("upstream")
	if err != nil {
		t.Fatal(err)
	}
	changed = changed.DeepCopy()
	changed.Generation, changed.Spec.Claims.Username = 2, "email"
	if _, err := e.supervisor.IdpV1alpha1().OIDCIdentityProviders(namespace).Update(e.ctx, changed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitForCache("the new generation", func() bool {
		got, err := e.c.oidc.Get("upstream")
		return err == nil && got.Generation == 2
	})
	e.sync()
	third, _ := e.registry.OIDC(namespace, "upstream")
	if e.probes("oidc") != 2 || third == nil || third.HTTPClient != first.HTTPClient || third.UsernameClaim != "email" {
		t.Errorf("after a claims change: %d probes (want 2), registered %+v", e.probes("oidc"), third)
	}

	// A new client Secret changes the credentials without a new discovery.
	s := secret("client", OIDCClientSecretType, map[string]string{"clientID": "a2", "clientSecret": "b2"})
	s.ResourceVersion = "2"
	if _, err := e.kube.CoreV1().Secrets(namespace).Update(e.ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitForCache("the new Secret", func() bool {
		got, err := e.c.secrets.Get("client")
		return err == nil && string(got.Data["clientID"]) == "a2"
	})
	e.sync()
	if up, _ := e.registry.OIDC(namespace, "upstream"); up == nil || up.ClientID != "a2" {
		t.Errorf("after the Secret changed the registry holds %+v, want client ID a2", up)
	}

	// Deleting the provider removes it from the registry.
	if err := e.supervisor.IdpV1alpha1().OIDCIdentityProviders(namespace).Delete(e.ctx, "upstream", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitForCache("the deletion", func() bool {
		l, err := e.c.oidc.List(labels.Everything())
		return err == nil && len(l) == 0
	})
	e.sync()
	if _, ok := e.registry.OIDC(namespace, "upstream"); ok {
		t.Error("a deleted OIDCIdentityProvider is still in the registry")
	}
	if len(e.c.oidcProbes.entries) != 0 {
		t.Error("the probe cache still holds a deleted OIDCIdentityProvider")
	}
}

func ldapSpec(host, bindSecret string) idpv1alpha1.LDAPIdentityProviderSpec {
	return idpv1alpha1.LDAPIdentityProviderSpec{
		Host: host,
		Bind: idpv1alpha1.LDAPIdentityProviderBind{SecretName: bindSecret},
		UserSearch: idpv1alpha1.LDAPIdentityProviderUserSearch{
			Base:       "ou=people,dc=example",
			Attributes: idpv1alpha1.LDAPIdentityProviderUserSearchAttributes{Username: "uid", UID: "entryUUID"},
		},
	}
}

func TestLDAP(t *testing.T) {
	bind := secret("bind", corev1.SecretTypeBasicAuth, map[string]string{"username": "cn=svc,dc=example", "password": "pw"})
	e := newEnv(t, []runtime.Object{bind},
		&idpv1alpha1.LDAPIdentityProvider{ObjectMeta: objectMeta("ready"), Spec: ldapSpec("good.ldap.example", "bind")},
		&idpv1alpha1.LDAPIdentityProvider{ObjectMeta: objectMeta("down"), Spec: ldapSpec("down.ldap.example", "bind")},
		&idpv1alpha1.LDAPIdentityProvider{ObjectMeta: objectMeta("no-bind"), Spec: ldapSpec("good.ldap.example", "missing")},
	)
	e.sync()
	bindValid, conn := idpv1alpha1.ConditionBindSecretValid, idpv1alpha1.ConditionLDAPConnectionValid
	get := func(name string) idpv1alpha1.IdentityProviderStatus {
		got, err := e.supervisor.IdpV1alpha1().LDAPIdentityProviders(namespace).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got.Status
	}
	checkStatus(t, "ready", get("ready"), idpv1alpha1.PhaseReady, ok(bindValid), ok(conn), ok(idpv1alpha1.ConditionTLSConfigurationValid))
	checkStatus(t, "down", get("down"), idpv1alpha1.PhaseError, ok(bindValid),
		summary{conn, string(metav1.ConditionFalse), idpv1alpha1.ReasonLDAPConnectionError})
	checkStatus(t, "no-bind", get("no-bind"), idpv1alpha1.PhaseError,
		summary{bindValid, string(metav1.ConditionFalse), idpv1alpha1.ReasonSecretNotFound},
		summary{conn, string(metav1.ConditionUnknown), idpv1alpha1.ReasonUnableToValidate})
	for name, want := range map[string]bool{"ready": true, "down": false, "no-bind": false} {
		if p, ok := e.registry.Password(issuer.TypeLDAP, namespace, name); ok != want || (ok && p == nil) {
			t.Errorf("%s in the LDAP registry: %v, want %v", name, ok, want)
		}
	}
	if _, ok := e.registry.Password(issuer.TypeActiveDirectory, namespace, "ready"); ok {
		t.Error("an LDAPIdentityProvider is listed as an Active Directory one")
	}
	if n := e.probes("ldap"); n != 2 {
		t.Errorf("%d probes, want 2 (ready and down; no-bind has nothing to probe)", n)
	}

	// Resyncs probe the failing server again, not the working one.
	e.sync()
	if n := e.probes("ldap"); n != 3 {
		t.Errorf("after a resync: %d probes, want 3 (only down again)", n)
	}

	// A changed bind Secret is probed again.
	bind = bind.DeepCopy()
	bind.Data["password"], bind.ResourceVersion = []byte("new"), "2"
	if _, err := e.kube.CoreV1().Secrets(namespace).Update(e.ctx, bind, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitForCache("the new bind Secret", func() bool {
		got, err := e.c.secrets.Get("bind")
		return err == nil && got.ResourceVersion == "2"
	})
	e.sync()
	if n := e.probes("ldap"); n != 5 {
		t.Errorf("after the bind Secret changed: %d probes, want 5 (ready and down)", n)
	}
}

func TestActiveDirectory(t *testing.T) {
	spec := func(host string) idpv1alpha1.ActiveDirectoryIdentityProviderSpec {
		return idpv1alpha1.ActiveDirectoryIdentityProviderSpec{Host: host, Bind: idpv1alpha1.ActiveDirectoryIdentityProviderBind{SecretName: "bind"}}
	}
	e := newEnv(t, []runtime.Object{secret("bind", corev1.SecretTypeBasicAuth, map[string]string{"username": "svc@example.com", "password": "pw"})},
		&idpv1alpha1.ActiveDirectoryIdentityProvider{ObjectMeta: objectMeta("ready"), Spec: spec("good.ad.example")},
		&idpv1alpha1.ActiveDirectoryIdentityProvider{ObjectMeta: objectMeta("down"), Spec: spec("down.ad.example")},
	)
	e.sync()
	e.sync()
	get := func(name string) idpv1alpha1.IdentityProviderStatus {
		got, err := e.supervisor.IdpV1alpha1().ActiveDirectoryIdentityProviders(namespace).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got.Status
	}
	checkStatus(t, "ready", get("ready"), idpv1alpha1.PhaseReady, ok(idpv1alpha1.ConditionBindSecretValid), ok(idpv1alpha1.ConditionLDAPConnectionValid))
	checkStatus(t, "down", get("down"), idpv1alpha1.PhaseError,
		summary{idpv1alpha1.ConditionSearchBaseFound, string(metav1.ConditionFalse), idpv1alpha1.ReasonErrorFetchingSearchBase})
	if len(get("ready").Conditions) != 4 {
		t.Errorf("ready has conditions %+v, want 4", get("ready").Conditions)
	}
	if _, ok := e.registry.Password(issuer.TypeActiveDirectory, namespace, "ready"); !ok {
		t.Error("the ready ActiveDirectoryIdentityProvider is not in the registry")
	}
	if _, ok := e.registry.Password(issuer.TypeActiveDirectory, namespace, "down"); ok {
		t.Error("a failing ActiveDirectoryIdentityProvider is in the registry")
	}
	if n := e.probes("activedirectory"); n != 3 {
		t.Errorf("%d connects over two syncs, want 3 (the working one is cached)", n)
	}
}

func TestGitHub(t *testing.T) {
	spec := func(host string) idpv1alpha1.GitHubIdentityProviderSpec {
		return idpv1alpha1.GitHubIdentityProviderSpec{
			GitHubAPI: idpv1alpha1.GitHubAPIConfig{Host: ptr.To(host)},
			AllowAuthentication: idpv1alpha1.GitHubAllowAuthenticationSpec{
				Organizations: idpv1alpha1.GitHubOrganizationsSpec{Allowed: []string{"seals"}},
			},
			Client: idpv1alpha1.GitHubClientSpec{SecretName: "github"},
		}
	}
	e := newEnv(t, []runtime.Object{secret("github", upstreamgithub.ClientSecretType, map[string]string{"clientID": "id", "clientSecret": "shh"})},
		&idpv1alpha1.GitHubIdentityProvider{ObjectMeta: objectMeta("ready"), Spec: spec("good.ghe.example")},
		&idpv1alpha1.GitHubIdentityProvider{ObjectMeta: objectMeta("down"), Spec: spec("down.ghe.example")},
		&idpv1alpha1.GitHubIdentityProvider{ObjectMeta: objectMeta("bad-host"), Spec: spec("https://ghe.example/path")},
	)
	e.sync()
	e.sync()
	get := func(name string) idpv1alpha1.IdentityProviderStatus {
		got, err := e.supervisor.IdpV1alpha1().GitHubIdentityProviders(namespace).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got.Status
	}
	conn := idpv1alpha1.ConditionGitHubConnectionValid
	checkStatus(t, "ready", get("ready"), idpv1alpha1.PhaseReady, ok(conn), ok(idpv1alpha1.ConditionClientCredentialsSecretValid))
	checkStatus(t, "down", get("down"), idpv1alpha1.PhaseError, summary{conn, string(metav1.ConditionFalse), idpv1alpha1.ReasonUnableToDialServer})
	checkStatus(t, "bad-host", get("bad-host"), idpv1alpha1.PhaseError,
		summary{idpv1alpha1.ConditionHostValid, string(metav1.ConditionFalse), upstreamgithub.ReasonInvalidHost},
		summary{conn, string(metav1.ConditionUnknown), idpv1alpha1.ReasonUnableToValidate})
	if len(get("ready").Conditions) != 6 {
		t.Errorf("ready has conditions %+v, want 6", get("ready").Conditions)
	}
	if _, ok := e.registry.GitHub(namespace, "ready"); !ok {
		t.Error("the ready GitHubIdentityProvider is not in the registry")
	}
	for _, name := range []string{"down", "bad-host"} {
		if _, ok := e.registry.GitHub(namespace, name); ok {
			t.Errorf("%s is in the registry", name)
		}
	}
	if n := e.probes("github"); n != 3 {
		t.Errorf("%d dials over two syncs, want 3 (the working one is cached)", n)
	}
}

// TestStatusWrites checks that a status from an older generation is rewritten in one update that
// keeps the lastTransitionTime of conditions whose status did not change.
func TestStatusWrites(t *testing.T) {
	old := metav1.NewTime(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))
	idp := &idpv1alpha1.LDAPIdentityProvider{ObjectMeta: objectMeta("ready"), Spec: ldapSpec("good.ldap.example", "bind")}
	idp.Generation = 2
	idp.Status.Conditions = []metav1.Condition{{
		Type: idpv1alpha1.ConditionBindSecretValid, Status: metav1.ConditionTrue, Reason: idpv1alpha1.ReasonSuccess,
		ObservedGeneration: 1, LastTransitionTime: old,
	}}
	e := newEnv(t, []runtime.Object{secret("bind", corev1.SecretTypeBasicAuth, map[string]string{"username": "cn=svc", "password": "pw"})}, idp)
	e.sync()
	got, err := e.supervisor.IdpV1alpha1().LDAPIdentityProviders(namespace).Get(e.ctx, "ready", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := meta.FindStatusCondition(got.Status.Conditions, idpv1alpha1.ConditionBindSecretValid)
	if c == nil || c.ObservedGeneration != 2 || !c.LastTransitionTime.Equal(&old) {
		t.Errorf("BindSecretValid = %+v, want observedGeneration 2 and the old transition time", c)
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
			_, ok := e.registry.OIDC(namespace, "upstream")
			return ok == want
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
		secret("client", OIDCClientSecretType, map[string]string{"clientID": "a", "clientSecret": "b"}), metav1.CreateOptions{}); err != nil {
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
	gh := secret("github", upstreamgithub.ClientSecretType, map[string]string{"clientID": "id", "clientSecret": "shh"})
	e := newEnv(t, []runtime.Object{bind, gh},
		&idpv1alpha1.LDAPIdentityProvider{ObjectMeta: objectMeta("ldap"), Spec: ldapSpec(closed, "bind")},
		&idpv1alpha1.ActiveDirectoryIdentityProvider{ObjectMeta: objectMeta("ad"), Spec: idpv1alpha1.ActiveDirectoryIdentityProviderSpec{
			Host: closed, Bind: idpv1alpha1.ActiveDirectoryIdentityProviderBind{SecretName: "bind"},
		}},
		&idpv1alpha1.GitHubIdentityProvider{ObjectMeta: objectMeta("github"), Spec: idpv1alpha1.GitHubIdentityProviderSpec{
			GitHubAPI:           idpv1alpha1.GitHubAPIConfig{Host: ptr.To(closed)},
			AllowAuthentication: idpv1alpha1.GitHubAllowAuthenticationSpec{Organizations: idpv1alpha1.GitHubOrganizationsSpec{Allowed: []string{"seals"}}},
			Client:              idpv1alpha1.GitHubClientSpec{SecretName: "github"},
		}},
	)
	e.c.probes = realProbes
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
