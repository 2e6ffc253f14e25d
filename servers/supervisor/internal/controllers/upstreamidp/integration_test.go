package upstreamidp

import (
	"context"
	"encoding/base64"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	idpv1alpha1 "sealion.dev/core/apis/supervisor/idp/v1alpha1"
	supervisorclientset "sealion.dev/core/generated/supervisor/clientset/versioned"
	supervisorinformers "sealion.dev/core/generated/supervisor/informers/externalversions"
	"sealion.dev/core/testing/controlplane"
	"sealion.dev/core/testing/oidcissuer"
	"sealion.dev/servers/supervisor/internal/connectors"
	"sealion.dev/servers/supervisor/internal/connectors/kinds"
	"sealion.dev/servers/supervisor/internal/connectors/oidcidp"
	"sealion.dev/servers/supervisor/internal/issuer"
)

// TestIntegrationOIDC runs the controller against a real kube-apiserver with the Supervisor's
// CRDs: an OIDCIdentityProvider of a live issuer becomes Ready and usable from the registry, one
// whose issuer does not answer reports why, and one whose issuer goes away shows it as soon as a
// login reports it.
func TestIntegrationOIDC(t *testing.T) {
	cp := controlplane.StartForTest(t, controlplane.Options{}) // skips under -short
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	crds, err := filepath.Glob(filepath.Join("..", "..", "..", "..", "..", "core", "generated", "crds", "idp.supervisor.pinniped.dev_*.yaml"))
	if err != nil || len(crds) != 4 {
		t.Fatalf("finding the identity provider CRDs: %v %v", crds, err)
	}
	kubectl := func(args ...string) {
		t.Helper()
		out, err := exec.CommandContext(ctx, cp.KubectlPath, append([]string{"--kubeconfig", cp.KubeconfigPath}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
	}
	for _, crd := range crds {
		kubectl("apply", "-f", crd)
	}
	kubectl("wait", "--for=condition=Established", "--timeout=30s", "crd", "--all")

	kube, err := kubernetes.NewForConfig(cp.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	supervisor, err := supervisorclientset.NewForConfig(cp.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	const ns = "pinniped-supervisor"
	if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "client"},
		Type:       oidcidp.ClientSecretType,
		StringData: map[string]string{oidcidp.ClientIDKey: "supervisor", oidcidp.ClientSecretKey: "shh"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	kubeFactory := kubeinformers.NewSharedInformerFactoryWithOptions(kube, 0, kubeinformers.WithNamespace(ns))
	crFactory := supervisorinformers.NewSharedInformerFactoryWithOptions(supervisor, 0, supervisorinformers.WithNamespace(ns))
	idps := crFactory.Idp().V1alpha1()
	registry := &connectors.Registry{}
	c := New(Config{Namespace: ns}, Clients{Supervisor: supervisor, Kube: kube}, kinds.All, Informers{
		IDPs:    idps,
		Secrets: kubeFactory.Core().V1().Secrets(), ConfigMaps: kubeFactory.Core().V1().ConfigMaps(),
	}, registry)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	kubeFactory.Start(runCtx.Done())
	crFactory.Start(runCtx.Done())
	go func() {
		defer close(done)
		c.Run(runCtx)
	}()
	t.Cleanup(func() {
		stop()
		<-done
		kubeFactory.Shutdown()
		crFactory.Shutdown()
	})

	live := oidcissuer.New(t)
	gone := oidcissuer.New(t)
	gone.Close()
	for name, iss := range map[string]*oidcissuer.Issuer{"live": live, "gone": gone} {
		if _, err := supervisor.IdpV1alpha1().OIDCIdentityProviders(ns).Create(ctx, &idpv1alpha1.OIDCIdentityProvider{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: idpv1alpha1.OIDCIdentityProviderSpec{
				Issuer: iss.Issuer,
				TLS:    &idpv1alpha1.TLSSpec{CertificateAuthorityData: base64.StdEncoding.EncodeToString(iss.CABundle)},
				Client: idpv1alpha1.OIDCClientCredentials{SecretName: "client"},
			},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	waitForPhase := func(name string, phase idpv1alpha1.Phase) *idpv1alpha1.OIDCIdentityProvider {
		t.Helper()
		var got *idpv1alpha1.OIDCIdentityProvider
		if !waitFor(ctx, func() bool {
			got, err = supervisor.IdpV1alpha1().OIDCIdentityProviders(ns).Get(ctx, name, metav1.GetOptions{})
			return err == nil && got.Status.Phase == phase
		}) {
			t.Fatalf("OIDCIdentityProvider %s never reached phase %s; last seen %+v (err %v)", name, phase, got, err)
		}
		return got
	}

	ready := waitForPhase("live", idpv1alpha1.PhaseReady)
	for _, ct := range []string{
		idpv1alpha1.ConditionClientCredentialsSecretValid, idpv1alpha1.ConditionOIDCDiscoverySucceeded,
		idpv1alpha1.ConditionAdditionalAuthorizeParametersValid, idpv1alpha1.ConditionTLSConfigurationValid,
	} {
		if c := meta.FindStatusCondition(ready.Status.Conditions, ct); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != ready.Generation {
			t.Errorf("live: condition %s = %+v, want True for generation %d", ct, c, ready.Generation)
		}
	}
	// The registry is published a moment after this status. Its connector sends browsers to the
	// live issuer as the Secret's client.
	var conn connectors.Connector
	var ok bool
	waitFor(ctx, func() bool { conn, ok = registry.Get(issuer.TypeOIDC, ns, "live"); return ok })
	browser, isBrowser := conn.(connectors.BrowserConnector)
	if !ok || !isBrowser {
		t.Fatalf("registry.Get(live) = %+v, %v", conn, ok)
	}
	to, err := browser.AuthorizeURL(ctx, connectors.Login{IDPName: "live", CallbackURL: "https://supervisor.example.com/callback"}, "state", connectors.BrowserSecrets{Nonce: "n", PKCEVerifier: "v"})
	if err != nil || !strings.HasPrefix(to, live.Issuer) || !strings.Contains(to, "client_id=supervisor") {
		t.Errorf("AuthorizeURL = %q, %v; want the live issuer's authorization endpoint for client supervisor", to, err)
	}

	broken := waitForPhase("gone", idpv1alpha1.PhaseError)
	if c := meta.FindStatusCondition(broken.Status.Conditions, idpv1alpha1.ConditionOIDCDiscoverySucceeded); c == nil ||
		c.Status != metav1.ConditionFalse || c.Reason != idpv1alpha1.ReasonUnreachable {
		t.Errorf("gone: OIDCDiscoverySucceeded = %+v, want False with reason Unreachable", c)
	}
	if _, ok := registry.Get(issuer.TypeOIDC, ns, "gone"); ok {
		t.Error("an OIDCIdentityProvider in phase Error is in the registry")
	}

	// A login that finds the live issuer gone reports it: its status shows the outage at once,
	// and its last good connector stays in the registry.
	live.Close()
	registry.Unreachable(issuer.TypeOIDC, ns, "live")
	outage := waitForPhase("live", idpv1alpha1.PhaseError)
	if c := meta.FindStatusCondition(outage.Status.Conditions, idpv1alpha1.ConditionOIDCDiscoverySucceeded); c == nil ||
		c.Status != metav1.ConditionFalse || c.Reason != idpv1alpha1.ReasonUnreachable || !strings.Contains(c.Message, live.Issuer) {
		t.Errorf("live, gone since: OIDCDiscoverySucceeded = %+v, want False with reason Unreachable naming the issuer", c)
	}
	if _, ok := registry.Get(issuer.TypeOIDC, ns, "live"); !ok {
		t.Error("the unreachable OIDCIdentityProvider lost its last good connector")
	}

	// Breaking its Secret takes it out of the registry.
	if err := kube.CoreV1().Secrets(ns).Delete(ctx, "client", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if !waitFor(ctx, func() bool { _, ok := registry.Get(issuer.TypeOIDC, ns, "live"); return !ok }) {
		t.Error("the OIDCIdentityProvider without its Secret stayed in the registry")
	}
}
