package conformance

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"sigs.k8s.io/e2e-framework/pkg/env"
	"sigs.k8s.io/e2e-framework/pkg/envconf"

	"sealion.dev/core/certauthority"
	"sealion.dev/e2e/installation"
	"sealion.dev/e2e/steps"
	"sealion.dev/providers"
	"sealion.dev/providers/all"
	"sealion.dev/providers/existing"
)

var (
	testenv env.Environment
	// signer is the CA the Concierge signs TokenCredentialRequest certificates with in this suite.
	signer *certauthority.CA
)

func TestMain(m *testing.M) {
	all.Main() // first: a managed cluster's supervisor is this test binary, run again
	flag.Parse()
	if testing.Short() {
		fmt.Println("skipping the Concierge end-to-end suite: it creates a real cluster, which -short excludes")
		os.Exit(0)
	}
	providerName := os.Getenv("SEALION_E2E_PROVIDER")
	if providerName == "" {
		providerName = "kubeadm"
	}
	// The existing provider runs against the cluster of $KUBECONFIG (its images must be pullable);
	// $SEALION_EXISTING_PROFILE says what kind of cluster it is, so what the tests may assume.
	p, err := all.New(providerName, all.Options{Progress: os.Stderr, Existing: existing.Options{
		KubeconfigPath: os.Getenv("KUBECONFIG"), Profile: os.Getenv(existing.ProfileEnv), ImagesPullable: true,
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if signer, err = certauthority.New("e2e token credential request signer", 24*time.Hour); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}

	testenv = env.NewWithConfig(envconf.New())
	setup := []env.Func{
		// SEALION_E2E_KUBE_VERSION ("v1.34.4") picks the cluster's version; empty is the provider's default.
		steps.CreateCluster(p, "sealion-e2e-"+providerName, providers.CreateOptions{KubernetesVersion: os.Getenv("SEALION_E2E_KUBE_VERSION")}),
	}
	// The suite installs the release (make release-check), as users do. $SEALION_REGISTRY
	// (registry.example.com/team) pushes its server image there and installs it from there by
	// digest, for clusters no image can be loaded into (a cloud's); else it is loaded into the
	// nodes. The images of the Dex, LDAP and GitHub fixtures go along where those run in the cluster.
	archives := []string{steps.ServerImageArchive()}
	if steps.FixturesInCluster(p.Info()) {
		archives = append(archives, steps.RepoPath("_output/images/dex-fixture.tar"),
			steps.RepoPath("_output/images/slapd-fixture.tar"), steps.RepoPath("_output/images/github-fixture.tar"))
	}
	if benchmarking() {
		archives = append(archives, streamerArchive())
	}
	if registry := os.Getenv(steps.RegistryEnv); registry != "" {
		setup = append(setup, steps.PushImages(registry, archives...))
	} else {
		setup = append(setup, steps.LoadImages(archives...))
	}
	// The local-user-authenticator is the webhook path's identity system, a fixture like Dex.
	setup = append(setup, steps.InstallLocalUserAuthenticator()...)
	var components []string
	if benchmarking() {
		components = append(components, "bench-resources")
	}
	switch {
	case installation.Installed():
		// The Concierge and Supervisor a user installed are tested as they are: nothing of theirs
		// is installed, changed or removed, only the objects the tests create and delete.
		if providerName != existing.Name {
			fmt.Fprintf(os.Stderr, "%s=true tests what a user installed on a cluster of theirs: it needs SEALION_E2E_PROVIDER=existing, not %s\n", installation.InstalledEnv, providerName)
			os.Exit(1)
		}
		setup = append(setup, steps.DiscoverInstallation())
	case p.Info().KubeControllerManagerPod:
		// The kube cert agent fetches the cluster's own signing key.
		setup = append(setup, steps.InstallConcierge(steps.ReleaseDir(), components...)...)
	case p.Info().IngressTLSPassthrough:
		// No signing key and no load balancer, but an Ingress: the proxy runs because the install
		// says so, at a hostname the Ingress passes TLS through for, as on Talos.
		setup = append(setup, steps.InstallConcierge(steps.ReleaseDir(), append(components, "impersonation-proxy-ingress")...)...)
	case p.Info().HasExternalLoadBalancer:
		// No signing key to fetch: the impersonation proxy signs with a CA of its own.
		setup = append(setup, steps.InstallConcierge(steps.ReleaseDir(), components...)...)
	default:
		// Neither a signing key nor a load balancer for the proxy: sign with a CA of the test's.
		setup = append(setup, steps.ApplyManifest(signerManifest()))
		setup = append(setup, steps.InstallConcierge(steps.ReleaseDir(), append(components, "signer-secret")...)...)
	}
	testenv.Setup(setup...)
	logs := os.Getenv("SEALION_E2E_LOGS")
	finish := []env.Func{steps.SaveInstallation(logs), steps.SaveCredentialIssuers(logs), steps.CollectLogs(logs)}
	if installation.Installed() {
		finish = append(finish, deleteSupervisorExposure(), steps.UninstallLocalUserAuthenticator())
	}
	testenv.Finish(append(finish, steps.DeleteCluster())...)
	os.Exit(testenv.Run(m))
}

// underTest is the installation under test: ours, or in installed mode a user's.
func underTest(ctx context.Context) installation.Installation {
	return steps.ClusterFrom(ctx).Installation
}

// skipIfInstalled skips, in installed mode, a test that changes more than the objects it creates
// and deletes (it says what in changes): a user's installation and cluster are theirs.
func skipIfInstalled(t *testing.T, changes string) {
	t.Helper()
	if installation.Installed() {
		t.Skipf("not run against an installation the suite did not make: it %s", changes)
	}
}

// signerManifest creates the Concierge's namespace and the Secret its signer-secret overlay mounts.
func signerManifest() string {
	ns := &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: "pinniped-concierge"},
	}
	secret := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "pinniped-concierge-signer", Namespace: "pinniped-concierge"},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: signer.Bundle(), corev1.TLSPrivateKeyKey: signer.PrivateKeyPEM()},
	}
	var docs []string
	for _, obj := range []any{ns, secret} {
		b, err := yaml.Marshal(obj)
		if err != nil {
			panic(err) // plain API objects always marshal
		}
		docs = append(docs, string(b))
	}
	return strings.Join(docs, "---\n")
}
